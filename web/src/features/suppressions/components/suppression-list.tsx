import { useEffect, useRef, useState, type ChangeEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { AddSuppressionRequest, Suppression, SuppressionImportResponse } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';
import { LocalTime } from '../../../components/ui/local-time';
import { PagedPanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { RowConfirm } from '../../../components/ui/row-confirm';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { PanelNotice } from '../../../components/ui/panel-notice';
import { errorText } from '../../../lib/api-client';
import {
  addSuppression,
  downloadSuppressionsCsv,
  importSuppressions,
  removeSuppression,
  suppressionKeys,
  useSuppressions,
} from '../api/suppressions-api';
import { AddSuppressionForm } from './add-suppression-form';
import { REASON_LABELS, addedByText, importOutcomeText } from './suppression-text';

/** How long typing may pause before the search is asked for: one call per word typed, not one per key. */
export const SEARCH_DEBOUNCE_MS = 250;

/**
 * The search field keeps what is typed to itself and hands the text up once typing pauses, so a key press
 * re-renders the field alone, not the whole list of up to hundreds of rows.
 */
function SearchField({ onSearch, onType }: { onSearch: (text: string) => void; onType: (text: string) => void }) {
  const [text, setText] = useState('');
  useEffect(() => {
    const timer = window.setTimeout(() => onSearch(text.trim()), SEARCH_DEBOUNCE_MS);
    return () => window.clearTimeout(timer);
  }, [text, onSearch]);
  return (
    <label className="panel__field">
      <span>Search addresses</span>
      <input
        type="search"
        value={text}
        onChange={(event) => {
          setText(event.target.value);
          onType(event.target.value.trim());
        }}
        placeholder="Any"
        data-autofocus
      />
    </label>
  );
}

/**
 * The suppressed addresses (docs/console.md §10.19): searched by address, keyset paged ("Load more"); add by hand,
 * remove after a confirmation in the row, import and export as CSV. The server audit-logs every change.
 */
export function SuppressionList({ token }: { token: string }) {
  const queryClient = useQueryClient();
  const [search, setSearch] = useState('');
  // What the search box holds now: a download clicked before typing pauses exports what the operator sees typed.
  const typedSearchRef = useRef('');
  const [adding, setAdding] = useState(false);
  const [notice, setNotice] = useState('');
  const [failure, setFailure] = useState<string | null>(null);
  const [refusedLines, setRefusedLines] = useState<SuppressionImportResponse['refused']>([]);
  const [confirmRemove, setConfirmRemove] = useState<string | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const list = useSuppressions(token, search);

  const refresh = () => void queryClient.invalidateQueries({ queryKey: suppressionKeys.all });
  const report = (text: string) => {
    setNotice(text);
    setFailure(null);
  };
  const failed = (fallback: string) => (error: unknown) => setFailure(errorText(error, fallback));

  const add = useMutation({
    mutationFn: (body: AddSuppressionRequest) => addSuppression(token, body),
    onSuccess: (entry) => {
      setAdding(false);
      setRefusedLines([]);
      report(`${entry.address} added to the suppression list.`);
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (entry: Suppression) => removeSuppression(token, entry.address),
    onSuccess: (_, entry) => {
      setConfirmRemove(null);
      report(`${entry.address} removed: mail to it is sent again.`);
      refresh();
    },
    onError: failed('The address could not be removed; try again.'),
  });
  const upload = useMutation({
    mutationFn: async (file: File) => importSuppressions(token, await file.text()),
    onSuccess: (result) => {
      setRefusedLines(result.refused);
      report(importOutcomeText(result));
      refresh();
    },
    onError: failed('The file could not be imported; check that it is CSV with address,note,expiresAt lines.'),
  });

  function onFileChosen(event: ChangeEvent<HTMLInputElement>) {
    const file = event.target.files?.[0];
    // Cleared so that choosing the same file again (after fixing it) imports it again.
    event.target.value = '';
    if (file) upload.mutate(file);
  }

  const columns: PanelColumn<Suppression>[] = [
    {
      id: 'address',
      header: 'Address',
      className: 'suppressions__cell-address',
      cell: (entry) => <TruncatedText text={entry.address} />,
    },
    {
      id: 'reason',
      header: 'Reason',
      cell: (entry) => (
        <>
          {REASON_LABELS[entry.reason]}
          {entry.detail ? <TruncatedText className="muted mono" text={entry.detail} /> : null}
        </>
      ),
    },
    { id: 'mail', header: 'Mail', cell: (entry) => (entry.mailId === null ? '' : `#${entry.mailId}`) },
    { id: 'note', header: 'Note', cell: (entry) => (entry.note ? <TruncatedText text={entry.note} /> : null) },
    {
      id: 'added',
      header: 'Added',
      className: 'nowrap',
      cell: (entry) => (
        <>
          <LocalTime iso={entry.createdAt} empty={null} />
          <span className="muted"> by {addedByText(entry)}</span>
        </>
      ),
    },
    {
      id: 'expires',
      header: 'Expires',
      className: 'nowrap',
      cell: (entry) => <LocalTime iso={entry.expiresAt} empty={<span className="muted">never</span>} />,
    },
    {
      id: 'actions',
      header: 'Actions',
      isHeaderHidden: true,
      cell: (entry) => (
        // The flex box inside the cell: a cell that is itself a flex box loses its row's height and border.
        <span className="suppressions__actions">
          {confirmRemove === entry.address ? (
            <RowConfirm
              question={'Send to it again?'}
              action="Remove"
              isBusy={remove.isPending}
              onConfirm={() => remove.mutate(entry)}
              onKeep={() => setConfirmRemove(null)}
            />
          ) : (
            <Button size="small" variant="ghost" aria-label={`Remove ${entry.address}`} onClick={() => setConfirmRemove(entry.address)}>
              Remove
            </Button>
          )}
        </span>
      ),
    },
  ];

  return (
    <>
      <div className="panel__toolbar">
        <SearchField onSearch={setSearch} onType={(text) => (typedSearchRef.current = text)} />
        <span className="suppressions__buttons">
          <Button
            variant="primary"
            size="small"
            aria-expanded={adding}
            onClick={() => {
              add.reset();
              setAdding(true);
            }}
          >
            Add address
          </Button>
          <Button size="small" disabled={upload.isPending} onClick={() => fileInput.current?.click()}>
            {upload.isPending ? 'Importing…' : 'Import CSV'}
          </Button>
          <input
            ref={fileInput}
            type="file"
            accept=".csv,text/csv"
            hidden
            tabIndex={-1}
            aria-label="CSV file to import"
            onChange={onFileChosen}
          />
          <Button
            size="small"
            onClick={() => {
              setFailure(null);
              downloadSuppressionsCsv(token, typedSearchRef.current).catch(failed('The CSV could not be downloaded; try again.'));
            }}
          >
            Download CSV
          </Button>
        </span>
      </div>
      {adding ? (
        <AddSuppressionForm
          busy={add.isPending}
          error={add.isError ? errorText(add.error, 'The address could not be added; try again.') : null}
          onSubmit={(body) => add.mutate(body)}
          onCancel={() => setAdding(false)}
        />
      ) : null}
      <PanelNotice text={notice} />
      <ErrorMessage text={failure} />
      {refusedLines.length > 0 ? (
        <ul className="suppressions__refused" aria-label="Refused lines">
          {refusedLines.map((line) => (
            <li key={line.line}>{`Line ${line.line}: ${line.address || '(empty)'} — ${line.reason}`}</li>
          ))}
        </ul>
      ) : null}
      <PagedPanelTable
        label="Suppressed addresses"
        columns={columns}
        rowKey={(entry) => entry.address}
        pages={list}
        emptyText={search.trim() !== '' ? 'No suppressed address matches this search.' : 'No suppressed addresses.'}
        errorText="The suppression list could not be loaded."
      />
    </>
  );
}
