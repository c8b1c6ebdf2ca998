import { useState } from 'react';
import type { Relay } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';
import { LocalTime } from '../../../components/ui/local-time';
import { PanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { RowConfirm } from '../../../components/ui/row-confirm';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { PanelNotice } from '../../../components/ui/panel-notice';
import { PanelAddToolbar } from '../../../components/ui/panel-toolbar';
import { errorText } from '../../../lib/api-client';
import { useCreateRelay } from '../api/create-relay';
import { useDeleteRelay } from '../api/delete-relay';
import { useRelayHealth } from '../api/list-relay-health';
import { useRelays } from '../api/list-relays';
import { useUpdateRelay } from '../api/update-relay';
import { RelayForm } from './relay-form';
import {
  RELAY_STATE_HINTS,
  RELAY_STATE_LABELS,
  connectionText,
  latencyText,
  quotaText,
  rateText,
  relayRowsOf,
  workersText,
  type RelayRow,
} from './relay-text';

type Editing = { kind: 'none' } | { kind: 'create' } | { kind: 'edit'; relay: Relay };

/**
 * The relays with their health (docs/console.md §10.22): the default relay (RELAY_URL) and every named one, each
 * with its state as a word beside its mark, since when, its rate against its limit, what it took today against
 * its quota, its last error and median latency; the health polled every 5 s. Add, edit (limits, URL, TLS, login)
 * and remove after a confirmation (refused while a route names the relay: the server's sentence says which).
 */
export function RelayList({ token, onClose }: { token: string; onClose: () => void }) {
  const relays = useRelays(token);
  const health = useRelayHealth(token);
  const create = useCreateRelay(token);
  const update = useUpdateRelay(token);
  const remove = useDeleteRelay(token);
  const [editing, setEditing] = useState<Editing>({ kind: 'none' });
  const [confirmRemove, setConfirmRemove] = useState<number | null>(null);
  const [notice, setNotice] = useState('');
  const [failure, setFailure] = useState<string | null>(null);

  const rows = relays.data ? relayRowsOf(relays.data, health.isError ? null : health.data) : [];
  const isHealthUnknown = health.data === null || health.isError;

  function startEditing(next: Editing) {
    create.reset();
    update.reset();
    setFailure(null);
    setEditing(next);
  }

  function removeRelay(relay: Relay) {
    setFailure(null);
    remove.mutate(relay, {
      onSuccess: () => {
        setConfirmRemove(null);
        setNotice(`Relay ${relay.name} removed.`);
      },
      onError: (error) => {
        setConfirmRemove(null);
        setFailure(errorText(error, `Relay ${relay.name} could not be removed; try again.`));
      },
    });
  }

  const columns: PanelColumn<RelayRow>[] = [
    {
      id: 'relay',
      header: 'Relay',
      className: 'relays__name',
      cell: (row) => (
        <>
          <strong>{row.name}</strong>
          {row.relay ? (
            <>
              <TruncatedText className="mono" text={row.relay.url} />
              <span className="muted relays__small">{connectionText(row.relay)}</span>
            </>
          ) : (
            <span className="muted relays__small">RELAY_URL, or the capture relay without it</span>
          )}
        </>
      ),
    },
    {
      id: 'state',
      header: 'State',
      className: 'relays__state-cell',
      cell: (row) => (
        <>
          <span className={`relays__state relays__state--${row.state}`} title={RELAY_STATE_HINTS[row.state]}>
            <span className="relays__mark" aria-hidden="true" />
            {RELAY_STATE_LABELS[row.state]}
          </span>
          {row.health?.since ? (
            <span className="muted relays__small">
              since <LocalTime iso={row.health.since} />
            </span>
          ) : null}
          {workersText(row.health) ? <span className="muted relays__small">{workersText(row.health)}</span> : null}
        </>
      ),
    },
    {
      id: 'rate',
      header: 'Rate',
      className: 'relays__number',
      cell: (row) => rateText(row.health, row.relay?.maxPerSecond ?? row.health?.maxPerSecond ?? null),
    },
    {
      id: 'today',
      header: 'Today',
      className: 'relays__number',
      cell: (row) => {
        const quota = quotaText(row.health, row.relay?.maxPerDay ?? row.health?.maxPerDay ?? null);
        return (
          <>
            {quota.sent}
            <span className="muted relays__small">{quota.quota}</span>
          </>
        );
      },
    },
    { id: 'latency', header: 'Latency', className: 'relays__number', cell: (row) => latencyText(row.health) },
    {
      id: 'lastError',
      header: 'Last error',
      className: 'relays__error-cell',
      cell: (row) =>
        row.health?.lastError ? (
          <>
            <TruncatedText className="mono" text={row.health.lastError} />
            <span className="muted relays__small">
              <LocalTime iso={row.health.lastErrorAt} />
            </span>
          </>
        ) : (
          <span className="muted">None</span>
        ),
    },
    {
      id: 'actions',
      header: 'Actions',
      isHeaderHidden: true,
      cell: (row) => {
        const relay = row.relay;
        if (!relay) return <span className="muted relays__small">Set by RELAY_URL</span>;
        return (
          // The flex box inside the cell: a cell that is itself a flex box loses its row's height and border.
          <span className="relays__actions">
            {confirmRemove === relay.id ? (
              <RowConfirm
                question={`Remove ${relay.name}?`}
                action="Remove"
                isBusy={remove.isPending}
                onConfirm={() => removeRelay(relay)}
                onKeep={() => setConfirmRemove(null)}
              />
            ) : (
              <>
                <Button
                  size="small"
                  variant="ghost"
                  aria-label={`Edit ${relay.name}`}
                  onClick={() => startEditing({ kind: 'edit', relay })}
                >
                  Edit
                </Button>
                <Button
                  size="small"
                  variant="ghost"
                  aria-label={`Remove ${relay.name}`}
                  onClick={() => {
                    setFailure(null);
                    setConfirmRemove(relay.id);
                  }}
                >
                  Remove
                </Button>
              </>
            )}
          </span>
        );
      },
    },
  ];

  return (
    <>
      {editing.kind === 'none' ? (
        <PanelAddToolbar addText="Add relay" onAdd={() => startEditing({ kind: 'create' })} onClose={onClose} />
      ) : (
        <RelayForm
          key={editing.kind === 'edit' ? editing.relay.id : 'new'}
          relay={editing.kind === 'edit' ? editing.relay : undefined}
          busy={create.isPending || update.isPending}
          error={
            create.isError
              ? errorText(create.error, 'The relay could not be added; try again.')
              : update.isError
                ? errorText(update.error, 'The relay could not be saved; try again.')
                : null
          }
          onCreate={(body) =>
            create.mutate(body, {
              onSuccess: (relay) => {
                setEditing({ kind: 'none' });
                setNotice(`Relay ${relay.name} added.`);
              },
            })
          }
          onUpdate={(relay, body) => {
            if (Object.keys(body).length === 0) {
              setEditing({ kind: 'none' });
              setNotice(`Nothing to change in ${relay.name}.`);
              return;
            }
            update.mutate(
              { id: relay.id, body },
              {
                onSuccess: (saved) => {
                  setEditing({ kind: 'none' });
                  setNotice(`Relay ${saved.name} saved.`);
                },
              },
            );
          }}
          onCancel={() => startEditing({ kind: 'none' })}
        />
      )}
      <PanelNotice text={notice} />
      <ErrorMessage text={failure} />
      {isHealthUnknown ? (
        <p className="muted relays__note">
          {health.isError
            ? 'Relay health could not be loaded; states show as Unknown until it can.'
            : 'This server does not report relay health yet (no GET /api/v1/relays/health): states show as Unknown.'}
        </p>
      ) : null}
      <PanelTable
        label="Relay list"
        columns={columns}
        rows={rows}
        rowKey={(row) => row.name}
        rowClassName={(row) => (row.state === 'down' ? 'relays__row--down' : undefined)}
        load={relays}
        emptyText="No relays."
        errorText="The relays could not be loaded."
      />
    </>
  );
}
