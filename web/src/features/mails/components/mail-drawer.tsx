import { useEffect, useRef } from 'react';
import { DELETABLE_STATUSES, MailStatus, REQUEUEABLE_STATUSES, type MailStatusCode } from '@outbox/contract/status';
import { Button } from '../../../components/ui/button';
import { downloadRawMail, useMailDetail } from '../api/get-mail';
import { HtmlBody } from './html-body';
import { useMailWebhookDeliveries } from '../api/get-mail-webhook-deliveries';
import { EventLog } from './mail-event-log';
import { Attachments, ContentRemoved, Headers } from './mail-message-sections';
import { Recipients } from './mail-recipients';
import { Summary } from './mail-summary';
import { WebhookDeliveries } from './mail-webhook-deliveries';

export interface DrawerActions {
  onDequeue: (id: number) => void;
  onDelete: (id: number) => void;
  onRequeue: (id: number) => void;
  pendingIds: ReadonlySet<number>;
}

interface MailDrawerProps {
  token: string;
  id: number;
  actions: DrawerActions;
  onClose: () => void;
}

/**
 * The detail drawer over the list: everything about one mail, and its buttons (Dequeue, Delete, Requeue where
 * the status allows; failures alert like the spec's row buttons). Esc or Close shuts it; focus goes into it
 * when it opens, and the list puts it back on the mail's row when it closes.
 */
export function MailDrawer({ token, id, actions, onClose }: MailDrawerProps) {
  const detail = useMailDetail(token, id);
  const webhookDeliveries = useMailWebhookDeliveries(token, id);
  const mail = detail.data;
  const panelRef = useRef<HTMLElement>(null);

  useEffect(() => {
    panelRef.current?.focus();
  }, [id]);

  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.key === 'Escape' && !event.defaultPrevented) onClose();
    }
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);

  const status = mail?.status as MailStatusCode | undefined;
  const pending = actions.pendingIds.has(id);
  // Content retention removed the message (docs/operations.md#content-retention): nothing to download or send again.
  const contentRemovedAt = mail?.contentRemovedAt ?? null;
  const title = `Mail #${id}`;

  return (
    <aside ref={panelRef} className="drawer" role="dialog" aria-label={title} tabIndex={-1}>
      <header className="drawer__header">
        <h2 className="drawer__title">{mail ? mail.subject || '(no subject)' : title}</h2>
        <span className="muted">{title}</span>
        <Button size="small" variant="ghost" onClick={onClose} aria-label="Close detail">
          Close
        </Button>
      </header>
      {mail ? (
        <div className="drawer__actions">
          {status === MailStatus.Queued ? (
            <Button size="small" disabled={pending} onClick={() => actions.onDequeue(id)} aria-label={`Dequeue mail #${id}`}>
              Dequeue
            </Button>
          ) : null}
          {status !== undefined && REQUEUEABLE_STATUSES.includes(status) && contentRemovedAt === null ? (
            <Button size="small" disabled={pending} onClick={() => actions.onRequeue(id)} aria-label={`Requeue mail #${id}`}>
              Requeue
            </Button>
          ) : null}
          {status !== undefined && DELETABLE_STATUSES.includes(status) ? (
            <Button size="small" variant="danger" disabled={pending} onClick={() => actions.onDelete(id)} aria-label={`Delete mail #${id}`}>
              Delete
            </Button>
          ) : null}
          {contentRemovedAt === null ? (
            <Button
              size="small"
              variant="ghost"
              onClick={() => {
                downloadRawMail(token, id).catch(() => window.alert(`Unable to download the mail #${id}`));
              }}
            >
              Download .eml
            </Button>
          ) : null}
        </div>
      ) : null}
      {/* Focusable so a keyboard user can scroll it (axe: scrollable-region-focusable). */}
      <div className="drawer__body" tabIndex={0} role="region" aria-label={`Detail of mail #${id}`}>
        {detail.isPending ? <p className="muted">Loading…</p> : null}
        {detail.isError ? <p className="muted">This mail could not be loaded (it may have been deleted).</p> : null}
        {mail ? (
          <>
            <section aria-labelledby="d-summary">
              <h3 id="d-summary">Summary</h3>
              <Summary mail={mail} />
              <p className="drawer__from">
                <strong>From</strong> {mail.fromName ? `${mail.fromName} <${mail.fromMail}>` : mail.fromMail}
              </p>
            </section>
            <section aria-labelledby="d-reply">
              <h3 id="d-reply">Provider reply</h3>
              <p className="mono">{mail.providerReply ?? <span className="muted">No reply yet</span>}</p>
            </section>
            <section aria-labelledby="d-recipients">
              <h3 id="d-recipients">Recipients</h3>
              <Recipients mail={mail} />
            </section>
            <section aria-labelledby="d-events">
              <h3 id="d-events">Event log</h3>
              <EventLog events={mail.events} />
            </section>
            <section aria-labelledby="d-webhooks">
              <h3 id="d-webhooks">Webhook deliveries</h3>
              {webhookDeliveries.data && webhookDeliveries.data.length > 0 ? (
                <WebhookDeliveries deliveries={webhookDeliveries.data} />
              ) : (
                <p className="muted">
                  {webhookDeliveries.isPending
                    ? 'Loading…'
                    : webhookDeliveries.isError
                      ? 'The webhook deliveries could not be loaded.'
                      : 'No webhook deliveries'}
                </p>
              )}
            </section>
            {contentRemovedAt !== null ? (
              <ContentRemoved at={contentRemovedAt} />
            ) : (
              <>
                <section aria-labelledby="d-text">
                  <h3 id="d-text">Text body</h3>
                  {mail.text === null ? <p className="muted">No text body</p> : <pre className="text-body">{mail.text}</pre>}
                </section>
                <section aria-labelledby="d-html">
                  <h3 id="d-html">HTML body</h3>
                  {mail.html === null ? (
                    <p className="muted">No HTML body</p>
                  ) : (
                    <HtmlBody key={id} html={mail.html} mailId={id} token={token} />
                  )}
                </section>
                <section aria-labelledby="d-attachments">
                  <h3 id="d-attachments">Attachments</h3>
                  {mail.attachments && mail.attachments.length > 0 ? (
                    <Attachments attachments={mail.attachments} />
                  ) : (
                    <p className="muted">No attachments</p>
                  )}
                </section>
                <section aria-labelledby="d-headers">
                  <h3 id="d-headers">Headers</h3>
                  {mail.headers.length === 0 ? <p className="muted">No stored message</p> : <Headers headers={mail.headers} />}
                </section>
              </>
            )}
          </>
        ) : null}
      </div>
    </aside>
  );
}
