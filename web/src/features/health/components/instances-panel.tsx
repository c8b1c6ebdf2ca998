import type { Instance } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { formatDate } from '../../../lib/format-date';
import { useInstances } from '../api/list-instances';
import { count, formatAge } from './health-text';

interface InstancesPanelProps {
  token: string;
  onClose: () => void;
}

function summaryOf(live: number, workers: number, stale: number): string {
  const parts = [
    `${count(live)} live ${live === 1 ? 'instance' : 'instances'}`,
    workers === 0 ? 'no worker running' : `${count(workers)} ${workers === 1 ? 'worker' : 'workers'}`,
  ];
  if (stale > 0) parts.push(`${count(stale)} stale`);
  return parts.join(' · ');
}

function InstanceRow({ instance, at }: { instance: Instance; at: number }) {
  const started = formatDate(instance.startedAt);
  const beat = formatDate(instance.lastHeartbeatAt);
  const isStale = instance.state === 'stale';
  const load = (value: number | null) => (value === null ? '—' : count(value));
  return (
    <tr className={isStale ? 'instances__row--stale' : undefined}>
      <td className="instances__id" title={instance.id}>
        {instance.id.slice(0, 8)}
      </td>
      <td>
        <span
          className={`instances__state instances__state--${instance.state}`}
          title={
            isStale
              ? `No heartbeat for more than ${instance.staleAfterSeconds} s: it stopped without saying so (crash, kill, lost store), or cannot reach the store`
              : `Heartbeat within the last ${instance.staleAfterSeconds} s`
          }
        >
          {isStale ? 'Stale (stopped?)' : 'Live'}
        </span>
      </td>
      <td>{instance.roles.length > 0 ? instance.roles.join(', ') : '—'}</td>
      <td>
        {instance.host} / {instance.pid}
      </td>
      <td>{instance.version}</td>
      <td title={started ? `${started.local} (${started.utc})` : undefined}>
        {formatAge(Math.max(0, Math.floor((at - Date.parse(instance.startedAt)) / 1000)))} ago
      </td>
      <td title={beat ? `${beat.local} (${beat.utc})` : undefined}>{formatAge(Math.floor(instance.heartbeatAgeSeconds))} ago</td>
      <td className="instances__number">{load(instance.inFlight)}</td>
      <td className="instances__number">{load(instance.deliveredLastMinute)}</td>
    </tr>
  );
}

/**
 * The Instances view (docs/console.md §10.14): every Outbox process from its heartbeat, polled every 5 s while
 * open, so an instance that stops shows here without a reload (gone at once after a graceful stop, stale 15 s
 * after the last heartbeat otherwise). Ages are measured on the server's clock, not the browser's.
 */
export function InstancesPanel({ token, onClose }: InstancesPanelProps) {
  const instances = useInstances(token);
  const answer = instances.data;
  const rows = answer?.data ?? [];
  const at = answer ? Date.parse(answer.meta.at) : 0;
  return (
    <ModalDialog title="Instances" onClose={onClose} placement="side" className="instances">
      <div className="instances__toolbar">
        <p className="instances__summary">
          {answer
            ? summaryOf(answer.meta.liveInstances, answer.meta.liveWorkers, rows.length - answer.meta.liveInstances)
            : instances.isError
              ? 'The instances could not be loaded.'
              : 'Loading…'}
        </p>
        <Button size="small" variant="ghost" onClick={onClose} data-autofocus>
          Close
        </Button>
      </div>
      <div className="instances__scroll" tabIndex={0} role="region" aria-label="Instance list">
        <table className="instances__table">
          <thead>
            <tr>
              <th scope="col">Instance</th>
              <th scope="col">State</th>
              <th scope="col">Roles</th>
              <th scope="col">Host / pid</th>
              <th scope="col">Version</th>
              <th scope="col">Started</th>
              <th scope="col">Last heartbeat</th>
              <th scope="col" className="instances__number">
                In flight
              </th>
              <th scope="col" className="instances__number">
                Delivered 1 min
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((instance) => (
              <InstanceRow key={instance.id} instance={instance} at={at} />
            ))}
            {rows.length === 0 ? (
              <tr>
                <td colSpan={9} className="muted">
                  {answer ? 'No instance has written a heartbeat in the last hour.' : instances.isError ? 'Unavailable' : 'Loading…'}
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
      <p className="instances__note muted">
        Each process writes a heartbeat every 5 s (by default). A graceful stop removes it from this list at once; one that stops without
        notice (a crash, a kill, a lost store) is marked stale 15 s after its last heartbeat and forgotten after an hour.
      </p>
    </ModalDialog>
  );
}
