import { useCallback, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useMutationState, useQueryClient } from '@tanstack/react-query';
import { Button } from '../../../components/ui/button';
import { useDeleteMail } from '../api/delete-mail';
import { prefetchMailDetail } from '../api/get-mail';
import { useDequeueMail } from '../api/dequeue-mail';
import { useRequeueMail } from '../api/requeue-mail';
import { mailKeys, prefetchMailList, useMailList, type ListSort, type MailListParams } from '../api/list-mails';
import type { RowActions } from './mails-columns';
import { MailsFilters } from './mails-filters';
import { MailsFooter } from './mails-footer';
import { MailDrawer, type DrawerActions } from './mail-drawer';
import { MailsTable } from './mails-table';
import type { MailsTableHandle } from './use-mails-table-handle';
import { useMailSelection, type MailSelection } from './use-mail-selection';
import { pagerOf, type MailFilters, type PageShown } from './mail-view';
import { useMailView } from './use-mail-view';
import { LiveNotices } from '../live/live-notices';
import { useLiveUpdates } from '../live/use-live-updates';
import { clearViewFromUrl } from './view-url';

interface MailsListViewProps {
  /** Non-empty: the app shell renders this view only while a session is held. */
  token: string;
  onLogout: () => void;
  /** Slots the app fills with other features (they never import this one): header buttons, above the table. */
  headerActions?: ReactNode;
  aboveTable?: ReactNode;
  /** Actions on the selection (the bulk bar); `onActed` reloads the list and clears the selection. */
  renderSelection?: (selection: MailSelection, onActed: () => void) => ReactNode;
  /** Filters another view asks for (the Overview's click on an application): applied each time a new one is given. */
  filterRequest?: { filters: Partial<MailFilters> } | null;
  /** Told of every change to mails the live updates report (the app refreshes other features' figures with it). */
  onMailsChanged?: () => void;
}

/** docs/console.md §2 mails list view: header with Logout, the table, its footer. */
export function MailsListView({
  token,
  onLogout,
  headerActions,
  aboveTable,
  renderSelection,
  filterRequest,
  onMailsChanged,
}: MailsListViewProps) {
  const queryClient = useQueryClient();
  const view = useMailView(
    useCallback((params: MailListParams) => void prefetchMailList(queryClient, token, params), [queryClient, token]),
  );
  const { state, dispatch, setFilters } = view;
  useEffect(() => {
    if (filterRequest) setFilters(filterRequest.filters);
  }, [filterRequest, setFilters]);
  const list = useMailList(token, view.params);
  // Keyboard focus on the rows goes through the table, which holds their elements.
  const tableRef = useRef<MailsTableHandle>(null);
  const live = useLiveUpdates(
    token,
    view.params,
    useCallback(() => dispatch({ type: 'first' }), [dispatch]),
    useCallback(() => tableRef.current?.keepFocusInRow(), []),
    onMailsChanged,
  );
  const dequeue = useDequeueMail(token);
  const remove = useDeleteMail(token);
  const requeue = useRequeueMail(token);
  const [openId, setOpenId] = useState<number | null>(null);
  const searchRef = useRef<HTMLInputElement>(null);

  // docs/console.md §8: a failed load empties the rows silently (no message, no alert).
  const failed = list.isError;
  const fromEnd = state.fromEnd;
  const mails = useMemo(() => (failed ? [] : (list.data?.data ?? [])), [failed, list.data]);
  const meta = failed ? undefined : list.data?.meta;
  const total = meta?.total ?? 0;
  const totalIsLowerBound = meta?.totalIsLowerBound ?? false;
  const ready = !list.isPlaceholderData && list.isSuccess;
  const page: PageShown = {
    rowCount: mails.length,
    total,
    totalIsLowerBound,
    nextCursor: meta?.nextCursor ?? null,
    prevCursor: meta?.prevCursor ?? null,
    lastCursor: meta?.lastCursor ?? null,
    ready,
  };
  const { firstRow, canPrevious, canNext, canLast } = pagerOf(state, page);
  const { rowSelection, onRowSelectionChange, selection } = useMailSelection(view.params, mails, total, totalIsLowerBound);
  const { clear: clearSelection } = selection;
  const onBulkActed = useCallback(() => {
    clearSelection();
    void queryClient.invalidateQueries({ queryKey: mailKeys.all });
  }, [clearSelection, queryClient]);

  // A page that emptied under us (its mails were deleted elsewhere): go back to the first page.
  useEffect(() => {
    if ((state.pageIndex > 0 || fromEnd) && list.isSuccess && !list.isPlaceholderData && mails.length === 0) dispatch({ type: 'first' });
  }, [state.pageIndex, fromEnd, list.isSuccess, list.isPlaceholderData, mails.length, dispatch]);

  // Ids with a dequeue or delete in flight (every call, not only the latest one).
  const pendingVariables = useMutationState({
    filters: { mutationKey: mailKeys.all, status: 'pending' },
    select: (mutation) => mutation.state.variables,
  });
  const pendingKey = pendingVariables.filter((id): id is number => typeof id === 'number').join(',');
  const pendingIds = useMemo(() => new Set(pendingKey === '' ? [] : pendingKey.split(',').map(Number)), [pendingKey]);

  const { mutate: dequeueMutate } = dequeue;
  const { mutate: deleteMutate } = remove;
  const actions: RowActions = useMemo(() => {
    /**
     * After a row action the list reloads; focus goes back to the mail's row, or to the row now in its place
     * when the mail left the page (deleted), so a keyboard user stays where they were.
     */
    const refocusAfterAction = (id: number, leavesOnSuccess: boolean) => {
      const returnToPlace = tableRef.current?.rememberPlace(id);
      return (_data: unknown, error: Error | null) =>
        window.requestAnimationFrame(() => returnToPlace?.(leavesOnSuccess && error === null));
    };
    return {
      onDequeue: (id) => dequeueMutate(id, { onSettled: refocusAfterAction(id, false) }),
      onDelete: (id) => deleteMutate(id, { onSettled: refocusAfterAction(id, true) }),
      pendingIds,
    };
  }, [dequeueMutate, deleteMutate, pendingIds]);

  // `/` focuses the search box, unless the operator is typing somewhere.
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      if (event.key !== '/' || event.ctrlKey || event.metaKey || event.altKey) return;
      const target = event.target as HTMLElement | null;
      if (target?.closest('input, textarea, select, [contenteditable="true"]')) return;
      event.preventDefault();
      searchRef.current?.focus();
    }
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const { mutate: requeueMutate } = requeue;
  const drawerActions: DrawerActions = useMemo(
    () => ({
      onDequeue: (id) => dequeueMutate(id),
      onRequeue: (id) => requeueMutate(id),
      // A deleted mail has nothing left to show: the drawer closes once the delete went through.
      onDelete: (id) => deleteMutate(id, { onSuccess: () => setOpenId((current) => (current === id ? null : current)) }),
      pendingIds,
    }),
    [dequeueMutate, requeueMutate, deleteMutate, pendingIds],
  );
  const closeDrawer = useCallback(() => {
    const closed = openId;
    setOpenId(null);
    // Focus goes back to the mail's row, where the operator was.
    if (closed !== null) window.requestAnimationFrame(() => tableRef.current?.focusRow(closed));
  }, [openId]);

  const prefetchDetail = useCallback((id: number) => prefetchMailDetail(queryClient, token, id), [queryClient, token]);
  const openMail = useCallback(
    (id: number) => {
      prefetchDetail(id);
      setOpenId(id);
    },
    [prefetchDetail],
  );

  const { sortBy } = view;
  const handleSort = useCallback((sort: ListSort) => sortBy(sort), [sortBy]);

  return (
    <div className="mails-view">
      <a
        className="skip-link"
        href="#mails-grid"
        onClick={(event) => {
          event.preventDefault();
          tableRef.current?.focusTabStop();
        }}
      >
        Skip to the mails table
      </a>
      <header className="app-header">
        <h1 className="app-header__title">MAILS LIST</h1>
        <div className="app-header__actions">
          {headerActions}
          <Button
            onClick={() => {
              clearViewFromUrl();
              onLogout();
            }}
          >
            Logout
          </Button>
        </div>
      </header>
      <main className="mails-main">
        <MailsFilters filters={state.filters} counts={meta?.counts} onChange={view.setFilters} searchRef={searchRef} />
        {aboveTable}
        <MailsTable
          mails={mails}
          sort={state.sort}
          order={state.order}
          onSort={handleSort}
          actions={actions}
          rowSelection={rowSelection}
          onRowSelectionChange={onRowSelectionChange}
          isLoading={list.isPending && list.fetchStatus === 'fetching'}
          isFetching={list.isFetching}
          onOpen={openMail}
          onPress={prefetchDetail}
          openId={openId}
          ref={tableRef}
        />
        <MailsFooter
          total={total}
          totalIsLowerBound={totalIsLowerBound}
          selected={selection.count}
          firstRow={firstRow}
          rowCount={mails.length}
          canPrevious={canPrevious}
          canNext={canNext}
          canLast={canLast}
          onFirst={() => dispatch({ type: 'first' })}
          onPrevious={() => dispatch({ type: 'previous', page })}
          onNext={() => dispatch({ type: 'next', page })}
          onLast={() => {
            if (page.lastCursor !== null) dispatch({ type: 'last', total, cursor: page.lastCursor });
          }}
        />
        <LiveNotices live={live} />
        {renderSelection?.(selection, onBulkActed)}
      </main>
      {openId === null ? null : <MailDrawer key={openId} token={token} id={openId} actions={drawerActions} onClose={closeDrawer} />}
    </div>
  );
}
