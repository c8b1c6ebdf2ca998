import { useCallback, useEffect, useReducer } from 'react';
import type { ListSort, MailListParams } from '../api/list-mails';
import { listParamsOf, viewReducer, type MailFilters } from './mail-view';
import { readViewFromUrl, writeViewToUrl } from './view-url';

/** The list's view state, started from the address bar and written back to it on every change. */
export function useMailView() {
  const [state, dispatch] = useReducer(viewReducer, undefined, () => readViewFromUrl(window.location.search));
  useEffect(() => writeViewToUrl(state), [state]);
  const sortBy = useCallback((sort: ListSort) => dispatch({ type: 'sort', sort }), []);
  const setFilters = useCallback((filters: Partial<MailFilters>) => dispatch({ type: 'filter', filters }), []);
  return { state, dispatch, params: listParamsOf(state), sortBy, setFilters };
}

/** The list parameters the view will start with: those of the address bar (a shared link) or the defaults. */
export function initialListParams(): MailListParams {
  return listParamsOf(readViewFromUrl(window.location.search));
}
