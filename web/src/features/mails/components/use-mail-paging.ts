import { useCallback, useReducer } from 'react';
import type { MailSort } from '@outbox/contract';
import type { MailListParams, SortOrder } from '../api/list-mails';

/**
 * Server-side paging with keyset cursors. `cursors[i]` is the cursor that loads page i (page 0 has none);
 * Next stores meta.nextCursor for the following page, Previous takes meta.prevCursor of the page shown.
 * Everything that selects a page (sort, order, cursor) ends up in the list query key.
 */
export interface PagingState {
  sort: MailSort;
  order: SortOrder;
  pageIndex: number;
  cursors: (string | null)[];
}

type PagingAction =
  | { type: 'sort'; sort: MailSort }
  | { type: 'next'; nextCursor: string }
  | { type: 'previous'; prevCursor: string | null }
  | { type: 'first' };

/** Dates read newest first; names and statuses read A→Z / low→high on the first click. */
function firstOrderOf(sort: MailSort): SortOrder {
  return sort === 'from' || sort === 'subject' || sort === 'status' ? 'asc' : 'desc';
}

export const INITIAL_PAGING: PagingState = { sort: 'receivedDate', order: 'desc', pageIndex: 0, cursors: [null] };

export function pagingReducer(state: PagingState, action: PagingAction): PagingState {
  switch (action.type) {
    case 'sort': {
      const order = state.sort === action.sort ? (state.order === 'asc' ? 'desc' : 'asc') : firstOrderOf(action.sort);
      // A sort change resets to the first page: cursors of another order mean nothing.
      return { sort: action.sort, order, pageIndex: 0, cursors: [null] };
    }
    case 'next': {
      const cursors = state.cursors.slice(0, state.pageIndex + 1);
      cursors[state.pageIndex + 1] = action.nextCursor;
      return { ...state, pageIndex: state.pageIndex + 1, cursors };
    }
    case 'previous': {
      if (state.pageIndex === 0) return state;
      const target = state.pageIndex - 1;
      const cursors = state.cursors.slice(0, state.pageIndex);
      // Page 0 is always loaded without a cursor (one cache entry for First and Previous).
      cursors[target] = target === 0 ? null : (action.prevCursor ?? state.cursors[target] ?? null);
      return { ...state, pageIndex: target, cursors };
    }
    case 'first':
      return state.pageIndex === 0 ? state : { ...state, pageIndex: 0, cursors: [null] };
  }
}

export function useMailPaging() {
  const [state, dispatch] = useReducer(pagingReducer, INITIAL_PAGING);
  const params: MailListParams = {
    sort: state.sort,
    order: state.order,
    cursor: state.cursors[state.pageIndex] ?? null,
  };
  const sortBy = useCallback((sort: MailSort) => dispatch({ type: 'sort', sort }), []);
  const next = useCallback((nextCursor: string) => dispatch({ type: 'next', nextCursor }), []);
  const previous = useCallback((prevCursor: string | null) => dispatch({ type: 'previous', prevCursor }), []);
  const first = useCallback(() => dispatch({ type: 'first' }), []);
  return { state, params, sortBy, next, previous, first };
}
