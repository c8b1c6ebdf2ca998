import { useCallback, useEffect, useMemo, useState } from 'react';
import { useMutationState } from '@tanstack/react-query';
import type { MailSort } from '@outbox/contract';
import type { RowSelectionState, Updater } from '@tanstack/react-table';
import { Button } from '../../../components/ui/button';
import { useDeleteMail } from '../api/delete-mail';
import { useDequeueMail } from '../api/dequeue-mail';
import { PAGE_SIZE, mailKeys, useMailList } from '../api/list-mails';
import { MailsFooter } from './mails-footer';
import type { RowActions } from './mails-columns';
import { MailsTable } from './mails-table';
import { useMailPaging } from './use-mail-paging';

interface MailsListViewProps {
  /** Non-empty: the app shell renders this view only while a session is held. */
  token: string;
  onLogout: () => void;
}

/** SPEC.md §2 mails list view: header with Logout, the table, its footer. */
export function MailsListView({ token, onLogout }: MailsListViewProps) {
  const paging = useMailPaging();
  const { state } = paging;
  const list = useMailList(token, paging.params);
  const dequeue = useDequeueMail(token);
  const remove = useDeleteMail(token);
  // Selection belongs to the page on screen: another page or order starts from an empty one.
  const pageKey = `${state.sort}|${state.order}|${state.pageIndex}`;
  const [selection, setSelection] = useState<{ pageKey: string; rows: RowSelectionState }>({ pageKey, rows: {} });
  const rowSelection = selection.pageKey === pageKey ? selection.rows : {};

  // SPEC.md §8: a failed load empties the rows silently (no message, no alert).
  const failed = list.isError;
  const mails = useMemo(() => (failed ? [] : (list.data?.data ?? [])), [failed, list.data]);
  const meta = failed ? undefined : list.data?.meta;
  const total = meta?.total ?? 0;
  const pageCount = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const showingRequestedPage = !list.isPlaceholderData;
  const nextCursor = meta?.nextCursor ?? null;
  const canNext = showingRequestedPage && nextCursor !== null && state.pageIndex + 1 < pageCount;
  const canPrevious = state.pageIndex > 0;
  const selected = mails.reduce((count, mail) => (rowSelection[String(mail.id)] ? count + 1 : count), 0);

  // A page that emptied under us (its mails were deleted elsewhere): go back to the first page.
  const { first } = paging;
  useEffect(() => {
    if (state.pageIndex > 0 && list.isSuccess && showingRequestedPage && mails.length === 0) first();
  }, [state.pageIndex, list.isSuccess, showingRequestedPage, mails.length, first]);

  // Ids with a dequeue or delete in flight (every call, not only the latest one).
  const pendingVariables = useMutationState({
    filters: { mutationKey: mailKeys.all, status: 'pending' },
    select: (mutation) => mutation.state.variables,
  });
  const pendingKey = pendingVariables.filter((id): id is number => typeof id === 'number').join(',');
  const pendingIds = useMemo(() => new Set(pendingKey === '' ? [] : pendingKey.split(',').map(Number)), [pendingKey]);

  const { mutate: dequeueMutate } = dequeue;
  const { mutate: deleteMutate } = remove;
  const actions: RowActions = useMemo(
    () => ({
      onDequeue: (id) => dequeueMutate(id),
      onDelete: (id) => deleteMutate(id),
      pendingIds,
    }),
    [dequeueMutate, deleteMutate, pendingIds],
  );

  const { sortBy } = paging;
  const handleSort = useCallback((sort: MailSort) => sortBy(sort), [sortBy]);
  const handleSelection = useCallback(
    (updater: Updater<RowSelectionState>) =>
      setSelection((current) => {
        const rows = current.pageKey === pageKey ? current.rows : {};
        return { pageKey, rows: typeof updater === 'function' ? updater(rows) : updater };
      }),
    [pageKey],
  );

  return (
    <div className="mails-view">
      <header className="app-header">
        <h1 className="app-header__title">MAILS LIST</h1>
        <Button onClick={onLogout}>Logout</Button>
      </header>
      <main className="mails-main">
        <MailsTable
          mails={mails}
          sort={state.sort}
          order={state.order}
          onSort={handleSort}
          actions={actions}
          rowSelection={rowSelection}
          onRowSelectionChange={handleSelection}
          isLoading={list.isPending && list.fetchStatus === 'fetching'}
          isFetching={list.isFetching}
        />
        <MailsFooter
          total={total}
          selected={selected}
          pageIndex={state.pageIndex}
          pageCount={pageCount}
          canPrevious={canPrevious}
          canNext={canNext}
          onFirst={paging.first}
          onPrevious={() => paging.previous(showingRequestedPage ? (meta?.prevCursor ?? null) : null)}
          onNext={() => {
            if (nextCursor !== null) paging.next(nextCursor);
          }}
        />
      </main>
    </div>
  );
}
