import { useCallback, useMemo, useState } from 'react';
import type { Mail } from '@outbox/contract';
import type { RowSelectionState, Updater } from '@tanstack/react-table';
import type { MailListParams } from '../api/list-mails';

/** The list's filter in the form of the bulk call's `filter` (docs/api.md, bulk actions): empty fields left out. */
export type SelectionFilter = {
  status?: string;
  q?: string;
  receivedFrom?: string;
  receivedTo?: string;
};

/**
 * What the operator selected, handed to whoever offers actions on it (the app wires the bulk feature here):
 * rows of the page shown, or every mail matching the filter ("Select all 12,345 matching").
 */
export interface MailSelection {
  /** Mails selected on the page shown (all of the page when `matching` is set). */
  mails: Pick<Mail, 'id' | 'status'>[];
  /** Set when the whole filter is selected: the filter and the total the operator saw. */
  matching: { filter: SelectionFilter; total: number; statuses: number[] } | null;
  /** Mails selected: the rows, or the total matching. */
  count: number;
  /** Every row of the page is selected, and more match than the page shows (offer "select all N matching"). */
  canSelectAllMatching: boolean;
  /** The total matching, and whether it is an estimate (a text search): then "all matching" is not offered. */
  total: number;
  selectAllMatching: () => void;
  clear: () => void;
}

function filterOf(status: string, q: string, receivedFrom: string | null, receivedTo: string | null): SelectionFilter {
  const filter: SelectionFilter = {};
  if (status !== '') filter.status = status;
  if (q !== '') filter.q = q;
  if (receivedFrom !== null) filter.receivedFrom = receivedFrom;
  if (receivedTo !== null) filter.receivedTo = receivedTo;
  return filter;
}

/**
 * Row selection of the list (the footer's `selected`): per page (another page, order or filter starts empty),
 * or the whole filter, kept across pages until the filter changes or a row is unticked.
 */
export function useMailSelection(params: MailListParams, mails: Mail[], total: number, totalIsLowerBound: boolean) {
  const pageKey = JSON.stringify(params);
  // The filter's fields only, not the page's cursor or order.
  const status = params.statuses.join(',');
  const { q, receivedFrom, receivedTo } = params;
  const filter = useMemo(() => filterOf(status, q, receivedFrom, receivedTo), [status, q, receivedFrom, receivedTo]);
  // The application is part of what "all matching" was chosen for: narrowing to one ends that selection.
  const filterKey = JSON.stringify({ ...filter, application: params.application });
  const [selection, setSelection] = useState<{ pageKey: string; rows: RowSelectionState }>({ pageKey, rows: {} });
  const [matchingKey, setMatchingKey] = useState<string | null>(null);
  const isMatching = matchingKey === filterKey && total > 0;

  const pageRows = useMemo(() => Object.fromEntries(mails.map((mail) => [String(mail.id), true])) as RowSelectionState, [mails]);
  const rowSelection = isMatching ? pageRows : selection.pageKey === pageKey ? selection.rows : {};

  const onRowSelectionChange = useCallback(
    (updater: Updater<RowSelectionState>) => {
      // Unticking a row while the whole filter is selected goes back to this page's rows, minus that one.
      const base = isMatching ? pageRows : selection.pageKey === pageKey ? selection.rows : {};
      setMatchingKey(null);
      setSelection({ pageKey, rows: typeof updater === 'function' ? updater(base) : updater });
    },
    [isMatching, pageRows, selection, pageKey],
  );

  const selectedMails = mails.filter((mail) => rowSelection[String(mail.id)]);
  const allOnPage = mails.length > 0 && selectedMails.length === mails.length;
  const value: MailSelection = {
    mails: selectedMails.map(({ id, status }) => ({ id, status })),
    matching: isMatching ? { filter, total, statuses: params.statuses } : null,
    count: isMatching ? total : selectedMails.length,
    // A bulk action's filter has no application: one application's list selects its rows, page by page.
    canSelectAllMatching: allOnPage && !isMatching && !totalIsLowerBound && total > mails.length && params.application === null,
    total,
    selectAllMatching: () => setMatchingKey(filterKey),
    clear: () => {
      setMatchingKey(null);
      setSelection({ pageKey, rows: {} });
    },
  };
  return { rowSelection, onRowSelectionChange, selection: value };
}
