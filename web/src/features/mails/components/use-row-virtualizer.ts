import { useCallback, type RefObject } from 'react';
import { defaultRangeExtractor, useVirtualizer, type Range } from '@tanstack/react-virtual';
import { HEADER_HEIGHT, ROW_HEIGHT } from './table-layout';

/**
 * Rows mounted beyond the viewport on each side: a wheel turn or PageDown shows rows already laid out, and a
 * page of 50 still mounts a fraction of its rows (docs/console.md §10.1).
 */
export const ROW_OVERSCAN = 5;

/**
 * Only the rows in view (and ROW_OVERSCAN around them) are mounted: laying out and painting 50 rows of this
 * grid was most of the time between an answer and its rows at 1M mails (docs/benchmarks.md). Rows have the
 * spec's fixed height, so nothing is measured, and the virtualizer knows them by index (keyed by mail, it would
 * try to keep a row in place across a page change, scrolling to follow it). The row holding the tab stop
 * (`tabStopIndex`, -1 for none) stays mounted wherever it is, so Tab always reaches the grid and a row with
 * focus never unmounts under the operator.
 */
export function useRowVirtualizer(rowCount: number, scrollRef: RefObject<HTMLDivElement | null>, tabStopIndex: number) {
  const keepTabStopMounted = useCallback(
    (range: Range) => {
      const indexes = defaultRangeExtractor(range);
      if (tabStopIndex < 0 || indexes.includes(tabStopIndex)) return indexes;
      return [...indexes, tabStopIndex].sort((a, b) => a - b);
    },
    [tabStopIndex],
  );
  return useVirtualizer({
    count: rowCount,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: ROW_OVERSCAN,
    // The body starts below the sticky header, which also covers the top of the viewport.
    scrollMargin: HEADER_HEIGHT,
    scrollPaddingStart: HEADER_HEIGHT,
    // Before the scroll element is measured, assume the window: the first render mounts the rows in view
    // rather than none, and the measurement that follows changes nothing on a normal screen.
    initialRect: { width: window.innerWidth, height: window.innerHeight },
    rangeExtractor: keepTabStopMounted,
    // A scroll re-renders the body as an ordinary update: flushSync from the virtualizer's layout effect is
    // refused by React 19 (it warns), and ROW_OVERSCAN covers the frame a fast scroll may wait.
    useFlushSync: false,
  });
}
