import { useQueueHealth } from '../api/get-queue-health';
import { formatAge, formatRate, workerState } from './health-text';

interface HealthStripProps {
  token: string;
}

function Figure({ label, value, title }: { label: string; value: string; title?: string }) {
  return (
    <div className="health__figure" title={title}>
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
}

const count = (value: number) => value.toLocaleString('en-US');

/**
 * The queue health strip above the table (docs/console.md §10), polled every few seconds: due now, oldest Queued,
 * in flight, delivered in the last minute and hour, failures in the last hour, and whether a worker is running.
 * "No worker running" is the loudest thing it says.
 */
export function HealthStrip({ token }: HealthStripProps) {
  const health = useQueueHealth(token);
  const data = health.data;
  const worker = data ? workerState(data) : null;
  return (
    <section className={`health${worker === 'missing' ? ' health--alarm' : ''}`} aria-label="Queue health">
      {data ? (
        <>
          {worker === 'missing' ? (
            <strong className="health__alarm" role="alert">
              {`No worker running: ${count(data.dueNow)} due ${data.dueNow === 1 ? 'mail waits' : 'mails wait'}`}
            </strong>
          ) : (
            <span className={`health__worker health__worker--${worker ?? 'idle'}`}>
              {worker === 'active' ? 'Worker active' : 'Worker idle'}
            </span>
          )}
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
  );
}
