import { useState } from 'react';
import { useQueueHealth } from '../api/get-queue-health';
import { count, formatAge, formatRate, relaysDownText, workerLine } from './health-text';
import { InstancesPanel } from './instances-panel';

interface HealthStripProps {
  token: string;
  /** Opens the Relays view (another feature's, wired by the app); without it a relay down is named as text. */
  onOpenRelays?: () => void;
}

function Figure({ label, value, title }: { label: string; value: string; title?: string }) {
  return (
    <div className="health__figure" title={title}>
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

/**
 * The queue health strip above the table (docs/console.md §10.14), polled every few seconds: how many workers run
 * (from their heartbeats, opening the Instances view), due now, oldest Queued, in flight, delivered in the last
 * minute and hour, failures in the last hour. "No worker running" is the loudest thing it says. A relay the workers
 * report down is named ("Relay down: eu"), as a button that opens the Relays view.
 */
export function HealthStrip({ token, onOpenRelays }: HealthStripProps) {
  const health = useQueueHealth(token);
  const [isInstancesOpen, setInstancesOpen] = useState(false);
  const data = health.data;
  const worker = data ? workerLine(data) : null;
  const relaysDown = data ? relaysDownText(data) : null;
  return (
    <>
      <section className={`health${worker?.kind === 'alarm' ? ' health--alarm' : ''}`} aria-label="Queue health">
        {data && worker ? (
          <>
            <span className="health__workers">
              {worker.kind === 'alarm' ? (
                <strong className="health__alarm" role="alert">
                  {worker.text}
                </strong>
              ) : worker.kind === 'none' ? (
                <strong className="health__no-worker">{worker.text}</strong>
              ) : null}
              {/* One button in one place whatever the line says, so focus comes back to it when the view closes. */}
              <button
                type="button"
                className={`health__instances${worker.kind === 'running' ? ' health__instances--running' : ''}`}
                aria-haspopup="dialog"
                title="Show every instance: roles, host, last heartbeat, load"
                onClick={() => setInstancesOpen(true)}
              >
                {worker.kind === 'running' ? worker.text : 'Show instances'}
              </button>
            </span>
            {relaysDown ? (
              // Polite: announced when a relay goes down, without interrupting as the alarm does.
              <strong className="health__relays-down" role="status">
                {onOpenRelays ? (
                  <button
                    type="button"
                    className="health__instances health__relays-button"
                    aria-haspopup="dialog"
                    title="Show the relays: state, rate, quota, last error"
                    onClick={onOpenRelays}
                  >
                    {relaysDown}
                  </button>
                ) : (
                  relaysDown
                )}
              </strong>
            ) : null}
            <dl className="health__figures">
              <Figure label="Due now" value={count(data.dueNow)} title={`${count(data.queued)} Queued in all`} />
              <Figure
                label="Oldest Queued"
                value={formatAge(data.oldestQueuedAgeSeconds)}
                title={data.oldestQueuedAt ? `Received ${data.oldestQueuedAt}` : 'Nothing Queued'}
              />
              <Figure label="In flight" value={count(data.inFlight)} />
              <Figure label="Delivered 1 min" value={count(data.deliveredLastMinute)} />
              <Figure label="Delivered 1 h" value={count(data.deliveredLastHour)} />
              <Figure
                label="Failed 1 h"
                value={`${count(data.failedLastHour)} (${formatRate(data.failureRateLastHour)})`}
                title="ProviderError and Error in the last hour, as a share of what finished"
              />
            </dl>
          </>
        ) : (
          <span className="muted">{health.isError ? 'Queue health unavailable' : 'Queue health…'}</span>
        )}
      </section>
      {isInstancesOpen ? <InstancesPanel token={token} onClose={() => setInstancesOpen(false)} /> : null}
    </>
  );
}
