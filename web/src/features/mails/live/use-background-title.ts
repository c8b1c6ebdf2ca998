/**
 * The tab title counts new failures (ProviderError, Error) while the tab is in the background: "(3) Outbox
 * console". It goes back to the plain title as soon as the tab is shown again.
 */
import { useCallback, useEffect, useRef } from 'react';

export function useBackgroundTitle(): { noteFailures: (ids: number[]) => void } {
  const failed = useRef(new Set<number>());
  const baseTitle = useRef(document.title);

  useEffect(() => {
    const base = baseTitle.current;
    function onVisibility() {
      if (document.visibilityState === 'visible') {
        failed.current.clear();
        document.title = base;
      }
    }
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      document.removeEventListener('visibilitychange', onVisibility);
      document.title = base;
    };
  }, []);

  const noteFailures = useCallback((ids: number[]) => {
    if (document.visibilityState === 'visible' || ids.length === 0) return;
    for (const id of ids) failed.current.add(id);
    document.title = `(${failed.current.size}) ${baseTitle.current}`;
  }, []);

  return { noteFailures };
}
