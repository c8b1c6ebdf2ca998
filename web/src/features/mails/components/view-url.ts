import { LIST_SORTS, PAGE_SIZE, type ListSort } from '../api/list-mails';
import { INITIAL_VIEW, NO_FILTERS, type ViewState } from './mail-view';

/**
 * The view in the address bar's query string (docs/console.md §10.11), so a link to "ProviderError mails to
 * example.com" can be shared: `status`, `q`, `receivedFrom`, `receivedTo` (local days), `application` (an API key's id, or
 * `none`), `sort`, `order`, and
 * the page (`page`, its opaque `cursor`, `end` for pages counted from the last one, `size` of the last page).
 * The token never goes here. The path stays `/` (the console has no routes, docs/console.md §2) and the address is
 * replaced, not pushed, so Back leaves the console instead of stepping through every keystroke.
 * Anything unknown or malformed in a link is ignored, not an error.
 */
const DAY = /^\d{4}-\d{2}-\d{2}$/;
/** As the server takes it: an API key's id, or `none`. */
const APPLICATION = /^(?:[1-9][0-9]{0,15}|none)$/;

export function readViewFromUrl(search: string): ViewState {
  const params = new URLSearchParams(search);
  const sortParam = params.get('sort');
  const sort: ListSort = (LIST_SORTS as readonly string[]).includes(sortParam ?? '') ? (sortParam as ListSort) : INITIAL_VIEW.sort;
  const orderParam = params.get('order');
  const order = orderParam === 'asc' || orderParam === 'desc' ? orderParam : sort === INITIAL_VIEW.sort ? INITIAL_VIEW.order : 'asc';
  const statuses = [
    ...new Set(
      (params.get('status') ?? '')
        .split(',')
        .filter((code) => /^[0-5]$/.test(code))
        .map(Number),
    ),
  ].sort();
  const day = (name: string) => {
    const value = params.get(name);
    return value !== null && DAY.test(value) ? value : null;
  };
  const filters = {
    ...NO_FILTERS,
    statuses,
    q: (params.get('q') ?? '').slice(0, 200),
    receivedFrom: day('receivedFrom'),
    receivedTo: day('receivedTo'),
    application: APPLICATION.test(params.get('application') ?? '') ? params.get('application') : null,
  };

  const page = Number(params.get('page') ?? '1');
  const cursor = params.get('cursor');
  const fromEnd = params.get('end') === '1';
  const size = Number(params.get('size') ?? PAGE_SIZE);
  const pageIndex = Number.isInteger(page) && page > 1 && cursor ? page - 1 : 0;
  const cursors: (string | null)[] = Array.from({ length: pageIndex + 1 }, () => null);
  // From the end, page 0 is read with the server's lastCursor, so it is in the address too.
  cursors[pageIndex] = pageIndex === 0 && !(fromEnd && cursor) ? null : cursor;
  const atEnd = fromEnd && cursor !== null;
  const lastPageSize = atEnd && Number.isInteger(size) && size >= 1 && size <= PAGE_SIZE ? size : PAGE_SIZE;
  return { sort, order, pageIndex, cursors, fromEnd: atEnd, lastPageSize, filters };
}

export function viewQueryOf(state: ViewState): string {
  const params = new URLSearchParams();
  const { filters } = state;
  if (filters.statuses.length > 0) params.set('status', [...filters.statuses].sort().join(','));
  if (filters.q !== '') params.set('q', filters.q);
  if (filters.receivedFrom) params.set('receivedFrom', filters.receivedFrom);
  if (filters.receivedTo) params.set('receivedTo', filters.receivedTo);
  if (filters.application !== null) params.set('application', filters.application);
  if (state.sort !== INITIAL_VIEW.sort || state.order !== INITIAL_VIEW.order) {
    params.set('sort', state.sort);
    params.set('order', state.order);
  }
  const cursor = state.cursors[state.pageIndex];
  if ((state.pageIndex > 0 || state.fromEnd) && cursor) {
    if (state.pageIndex > 0) params.set('page', String(state.pageIndex + 1));
    params.set('cursor', cursor);
  }
  if (state.fromEnd) {
    params.set('end', '1');
    params.set('size', String(state.lastPageSize));
  }
  const query = params.toString();
  return query === '' ? '' : `?${query}`;
}

export function writeViewToUrl(state: ViewState): void {
  const query = viewQueryOf(state);
  if (query === window.location.search) return;
  window.history.replaceState(window.history.state, '', `${window.location.pathname}${query}${window.location.hash}`);
}

/** Logout starts the next session from the default view. */
export function clearViewFromUrl(): void {
  if (window.location.search !== '')
    window.history.replaceState(window.history.state, '', `${window.location.pathname}${window.location.hash}`);
}
