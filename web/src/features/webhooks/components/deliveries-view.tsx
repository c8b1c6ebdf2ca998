import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { WEBHOOK_DELIVERY_STATES, type WebhookDelivery, type WebhookDeliveryState, type WebhookEndpoint } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { LocalTime as Time } from '../../../components/ui/local-time';
import { PagedPanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { PanelNotice } from '../../../components/ui/panel-notice';
import { errorText } from '../../../lib/api-client';
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

  const columns: PanelColumn<WebhookDelivery>[] = [
    { id: 'time', header: 'Time', cell: (delivery) => <Time iso={delivery.createdAt} /> },
    { id: 'event', header: 'Event', cell: (delivery) => delivery.eventType },
    {
      id: 'mail',
      header: 'Mail',
      cell: (delivery) => (delivery.mailId === null ? <span className="muted">—</span> : `#${delivery.mailId}`),
    },
    {
      id: 'state',
      header: 'State',
      cell: (delivery) => <span className={`webhooks__state webhooks__state--${delivery.state}`}>{delivery.state}</span>,
    },
    {
      id: 'answer',
      header: 'Last answer',
      cell: (delivery) => {
        const last = delivery.attempts.at(-1);
        return last ? attemptText(last) : <span className="muted">Not tried yet</span>;
      },
    },
    { id: 'next', header: 'Next try', cell: (delivery) => <Time iso={delivery.nextAttemptAt} /> },
    {
      id: 'actions',
      header: 'Actions',
      isHeaderHidden: true,
      cell: (delivery) => (
        <span className="webhooks__actions">
          <Button
            size="small"
            variant="ghost"
            aria-expanded={open.has(delivery.id)}
            aria-controls={attemptsIdOf(delivery)}
            onClick={() => toggle(delivery.id)}
          >
            {`Attempts (${delivery.attempts.length})`}
          </Button>
          <Button
            size="small"
            variant="ghost"
            disabled={replayMutation.isPending}
            onClick={() => replayMutation.mutate({ eventId: delivery.eventId })}
            aria-label={`Replay ${delivery.eventType} ${delivery.eventId}`}
          >
            Replay
          </Button>
        </span>
      ),
    },
  ];

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
      <PanelNotice text={notice} />
      <PagedPanelTable
        label="Delivery log"
        columns={columns}
        rowKey={(delivery) => delivery.id}
        pages={log}
        emptyText="No deliveries"
        errorText="The delivery log could not be loaded."
        renderDetail={(delivery) =>
          open.has(delivery.id) ? { id: attemptsIdOf(delivery), content: <Attempts delivery={delivery} /> } : null
        }
      />
    </section>
  );
}

const attemptsIdOf = (delivery: WebhookDelivery) => `delivery-${delivery.id}-attempts`;

/** A delivery's attempts, opened under its row: each one's time, answer, duration and the receiver's body. */
function Attempts({ delivery }: { delivery: WebhookDelivery }) {
  return (
    <>
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
    </>
  );
}
