import { useCallback, useEffect, useLayoutEffect, useReducer, useRef } from 'react';
import type { ListSort, MailListParams } from '../api/list-mails';
import { listParamsOf, viewReducer, type MailFilters, type ViewAction } from './mail-view';
import { readViewFromUrl, writeViewToUrl } from './view-url';

/**
 * The list's view state, started from the address bar and written back to it on every change.
 * `onNextParams` hears the list parameters of each change as it is dispatched, before React renders it: the
 * list view starts that page's request there, so it runs while the view re-renders (filters, busy table).
 */
export function useMailView(onNextParams?: (params: MailListParams) => void) {
  const [state, dispatchState] = useReducer(viewReducer, undefined, () => readViewFromUrl(window.location.search));
  // history.replaceState costs Chromium 1–25 ms on this machine (a round trip to the browser process). Written
  // in the effect of a click it held the frame that answers the click; it is written right after that frame
  // is painted instead, while the list request (already on its way: see dispatch) is in flight. Unmounting
  // (logout) drops a write still waiting.
  useEffect(() => {
    let timer: number | undefined;
    const frame = window.requestAnimationFrame(() => {
      timer = window.setTimeout(() => writeViewToUrl(state), 0);
    });
    return () => {
      window.cancelAnimationFrame(frame);
      window.clearTimeout(timer);
    };
  }, [state]);
  const latest = useRef({ state, onNextParams });
  useLayoutEffect(() => {
    latest.current = { state, onNextParams };
  });
  // The reducer is pure: running it once more here for the next parameters changes nothing. The state it
  // gives is kept until the render, so two changes in one handler announce where the second one leads.
  const dispatch = useCallback((action: ViewAction) => {
    const { state: current, onNextParams: announce } = latest.current;
    const next = viewReducer(current, action);
    if (next !== current) {
      latest.current = { state: next, onNextParams: announce };
      announce?.(listParamsOf(next));
    }
    dispatchState(action);
  }, []);
  const sortBy = useCallback((sort: ListSort) => dispatch({ type: 'sort', sort }), [dispatch]);
  const setFilters = useCallback((filters: Partial<MailFilters>) => dispatch({ type: 'filter', filters }), [dispatch]);
  return { state, dispatch, params: listParamsOf(state), sortBy, setFilters };
}

/** The list parameters the view will start with: those of the address bar (a shared link) or the defaults. */
export function initialListParams(): MailListParams {
  return listParamsOf(readViewFromUrl(window.location.search));
}
