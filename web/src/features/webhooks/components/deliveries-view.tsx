import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { WEBHOOK_DELIVERY_STATES, type WebhookDelivery, type WebhookDeliveryState, type WebhookEndpoint } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { LoadMoreButton } from '../../../components/ui/load-more-button';
import { errorText } from '../../../lib/api-client';
import { formatDate } from '../../../lib/format-date';
import { replay, useDeliveries, webhookKeys } from '../api/webhooks-api';
import { attemptText } from './webhook-text';

interface DeliveriesViewProps {
  token: string;
  endpoint: WebhookEndpoint;
  onBack: () => void;
}

/** A local date-time input's value (no zone) → the ISO instant it names in the browser's zone. */
function localToInstant(value: string): string | null {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

function Time({ iso }: { iso: string | null }) {
  const at = formatDate(iso);
  return at ? (
    <time dateTime={at.utc} title={at.utc}>
      {at.local}
    </time>
  ) : (
    <span className="muted">—</span>
  );
}

/**
 * One endpoint's delivery log (docs/console.md §10.17): every delivery, newest first, with each attempt's time,
 * answer, duration and the start of the receiver's body; replay of one event or of every failure since a time.
 */
export function DeliveriesView({ token, endpoint, onBack }: DeliveriesViewProps) {
  const queryClient = useQueryClient();
  const [state, setState] = useState<WebhookDeliveryState | ''>('');
  const [since, setSince] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set());
  const log = useDeliveries(token, endpoint.id, state === '' ? null : state);
  const deliveries = log.data?.pages.flatMap((page) => page.data) ?? [];

  const replayMutation = useMutation({
    mutationFn: (body: { eventId: string } | { failedSince: string }) => replay(token, endpoint.id, body),
    onSuccess: (result) => {
      setNotice(result.queued === 1 ? '1 delivery queued again.' : `${result.queued.toLocaleString('en-US')} deliveries queued again.`);
      void queryClient.invalidateQueries({ queryKey: webhookKeys.all });
    },
    onError: (error) => setNotice(errorText(error, 'The replay could not be queued; try again.')),
  });

  const toggle = (id: number) =>
    setOpen((current) => {
      const next = new Set(current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });

  return (
    <section className="webhooks__deliveries" aria-label={`Deliveries to ${endpoint.url}`}>
      <div className="panel__toolbar">
        <Button size="small" variant="ghost" onClick={onBack} data-autofocus>
          ← Endpoints
        </Button>
        <h3 className="webhooks__subtitle">Deliveries to {endpoint.url}</h3>
      </div>
      <div className="panel__toolbar">
        <label className="panel__field">
          <span>State</span>
          <select value={state} onChange={(e) => setState(e.target.value as WebhookDeliveryState | '')}>
            <option value="">Every state</option>
            {WEBHOOK_DELIVERY_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label className="panel__field">
          <span>Failed since</span>
          <input type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />
        </label>
        <Button
          size="small"
          disabled={since === '' || replayMutation.isPending}
          onClick={() => {
            const failedSince = localToInstant(since);
            if (failedSince) replayMutation.mutate({ failedSince });
          }}
        >
          Replay failed
        </Button>
      </div>
      <p role="status" className="muted webhooks__notice">
        {notice ?? ''}
      </p>
      <div className="panel__scroll" tabIndex={0} role="region" aria-label="Delivery log">
        <table className="panel__table">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Event</th>
              <th scope="col">Mail</th>
              <th scope="col">State</th>
              <th scope="col">Last answer</th>
              <th scope="col">Next try</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((delivery) => (
              <DeliveryRows
                key={delivery.id}
                delivery={delivery}
                open={open.has(delivery.id)}
                onToggle={() => toggle(delivery.id)}
                onReplay={() => replayMutation.mutate({ eventId: delivery.eventId })}
                replaying={replayMutation.isPending}
              />
            ))}
            {deliveries.length === 0 ? (
              <tr>
                <td colSpan={7} className="muted">
                  {log.isPending ? 'Loading…' : log.isError ? 'The delivery log could not be loaded.' : 'No deliveries'}
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
        <LoadMoreButton pages={log} />
      </div>
    </section>
  );
}

interface DeliveryRowsProps {
  delivery: WebhookDelivery;
  open: boolean;
  onToggle: () => void;
  onReplay: () => void;
  replaying: boolean;
}

function DeliveryRows({ delivery, open, onToggle, onReplay, replaying }: DeliveryRowsProps) {
  const last = delivery.attempts.at(-1);
  const attemptsId = `delivery-${delivery.id}-attempts`;
  return (
    <>
      <tr>
        <td>
          <Time iso={delivery.createdAt} />
        </td>
        <td>{delivery.eventType}</td>
        <td>{delivery.mailId === null ? <span className="muted">—</span> : `#${delivery.mailId}`}</td>
        <td>
          <span className={`webhooks__state webhooks__state--${delivery.state}`}>{delivery.state}</span>
        </td>
        <td>{last ? attemptText(last) : <span className="muted">Not tried yet</span>}</td>
        <td>
          <Time iso={delivery.nextAttemptAt} />
        </td>
        <td className="webhooks__actions">
          <Button size="small" variant="ghost" aria-expanded={open} aria-controls={attemptsId} onClick={onToggle}>
            {`Attempts (${delivery.attempts.length})`}
          </Button>
          <Button
            size="small"
            variant="ghost"
            disabled={replaying}
            onClick={onReplay}
            aria-label={`Replay ${delivery.eventType} ${delivery.eventId}`}
          >
            Replay
          </Button>
        </td>
      </tr>
      {open ? (
        <tr id={attemptsId} className="webhooks__attempts-row">
          <td colSpan={7}>
            {delivery.attempts.length === 0 ? (
              <p className="muted">No attempt yet.</p>
            ) : (
              <ol className="webhooks__attempts">
                {delivery.attempts.map((attempt, index) => (
                  <li key={`${attempt.at}-${index}`}>
                    <Time iso={attempt.at} /> · {attemptText(attempt)} · {attempt.durationMs} ms
                    {attempt.response !== '' ? <pre className="webhooks__response">{attempt.response}</pre> : null}
                  </li>
                ))}
              </ol>
            )}
            <p className="muted">Event {delivery.eventId}</p>
          </td>
        </tr>
      ) : null}
    </>
  );
}
