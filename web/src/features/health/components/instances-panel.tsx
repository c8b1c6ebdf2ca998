import type { Instance } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { PanelTable, type PanelColumn } from '../../../components/ui/panel-table';
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

const load = (value: number | null) => (value === null ? '—' : count(value));

/** The columns; `at` is the answer's time on the server's clock, which the ages are measured from. */
function columnsAt(at: number): PanelColumn<Instance>[] {
  return [
    {
      id: 'instance',
      header: 'Instance',
      className: 'instances__id',
      cell: (instance) => <span title={instance.id}>{instance.id.slice(0, 8)}</span>,
    },
    {
      id: 'state',
      header: 'State',
      cell: (instance) => {
        const isStale = instance.state === 'stale';
        return (
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
        );
      },
    },
    { id: 'roles', header: 'Roles', cell: (instance) => (instance.roles.length > 0 ? instance.roles.join(', ') : '—') },
    { id: 'host', header: 'Host / pid', cell: (instance) => `${instance.host} / ${instance.pid}` },
    { id: 'version', header: 'Version', cell: (instance) => instance.version },
    {
      id: 'started',
      header: 'Started',
      cell: (instance) => {
        const started = formatDate(instance.startedAt);
        return (
          <span title={started ? `${started.local} (${started.utc})` : undefined}>
            {formatAge(Math.max(0, Math.floor((at - Date.parse(instance.startedAt)) / 1000)))} ago
          </span>
        );
      },
    },
    {
      id: 'heartbeat',
      header: 'Last heartbeat',
      cell: (instance) => {
        const beat = formatDate(instance.lastHeartbeatAt);
        return (
          <span title={beat ? `${beat.local} (${beat.utc})` : undefined}>{formatAge(Math.floor(instance.heartbeatAgeSeconds))} ago</span>
        );
      },
    },
    { id: 'inFlight', header: 'In flight', className: 'instances__number', cell: (instance) => load(instance.inFlight) },
    { id: 'delivered', header: 'Delivered 1 min', className: 'instances__number', cell: (instance) => load(instance.deliveredLastMinute) },
  ];
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
      <PanelTable
        label="Instance list"
        className="instances__table"
        columns={columnsAt(at)}
        rows={rows}
        rowKey={(instance) => instance.id}
        rowClassName={(instance) => (instance.state === 'stale' ? 'instances__row--stale' : undefined)}
        load={instances}
        emptyText="No instance has written a heartbeat in the last hour."
        errorText="Unavailable"
      />
      <p className="instances__note muted">
        Each process writes a heartbeat every 5 s (by default). A graceful stop removes it from this list at once; one that stops without
        notice (a crash, a kill, a lost store) is marked stale 15 s after its last heartbeat and forgotten after an hour.
      </p>
    </ModalDialog>
  );
}
