import { useCallback, useRef, useState } from 'react';
import type { Mail } from '@outbox/contract';

/**
 * The grid's one tab stop (roving focus): the row last focused while it is still shown, else the first row;
 * index -1 and id null on an empty page.
 */
export function useTabStop(mails: readonly Mail[]) {
  const [activeId, setActiveId] = useState<string | null>(null);
  const activeIndex = mails.findIndex((mail) => String(mail.id) === activeId);
  const tabStopIndex = activeIndex >= 0 ? activeIndex : mails.length > 0 ? 0 : -1;
  const tabStopId = tabStopIndex >= 0 ? String(mails[tabStopIndex]!.id) : null;
  return { activeId, setActiveId, tabStopIndex, tabStopId };
}

/**
 * Focus moves among the rows of a virtualized body: the row elements by row id, kept as rows mount and
 * unmount (`registerRow`, the one ref callback of every row), and `focusRowAt`, which scrolls a row into view
 * and focuses it, or, when it is not mounted yet, makes it the tab stop (which mounts it) and focuses it as it
 * mounts.
 */
export function useRowFocus(
  mails: readonly Mail[],
  scroller: { scrollToIndex: (index: number, options: { align: 'auto' }) => void },
  setActiveId: (rowId: string) => void,
) {
  const rowElements = useRef(new Map<string, HTMLTableRowElement>());
  // A row that focus is moving to but that is not mounted yet: focused as it mounts (registerRow).
  const pendingFocusId = useRef<string | null>(null);

  /** Moves focus to the row at `index` of the page: scrolled into view, mounted if it was not, then focused. */
  function focusRowAt(index: number) {
    const mail = mails[index];
    if (!mail) return;
    const rowId = String(mail.id);
    scroller.scrollToIndex(index, { align: 'auto' });
    const element = rowElements.current.get(rowId);
    if (element) {
      focusInView(element);
    } else {
      // Becoming the tab stop keeps it in the mounted range (rangeExtractor); registerRow focuses it.
      pendingFocusId.current = rowId;
      setActiveId(rowId);
    }
  }

  // One function for all rows, so React calls it only as a row mounts or unmounts.
  const registerRow = useCallback((element: HTMLTableRowElement | null) => {
    const rowId = element?.dataset.mailId;
    if (!element || rowId === undefined) return undefined;
    const rows = rowElements.current;
    rows.set(rowId, element);
    if (pendingFocusId.current === rowId) {
      pendingFocusId.current = null;
      focusInView(element);
    }
    return () => {
      if (rows.get(rowId) === element) rows.delete(rowId);
    };
  }, []);

  return { rowElements, registerRow, focusRowAt };
}

/**
 * Focuses a mounted row and makes sure it is in view. The virtualizer's scrollToIndex already aimed there, but
 * a re-render between its scroll and the mount (a row that mounts only because it became the tab stop) could
 * leave a focused row out of sight (seen in Chromium: End focused row 50 with the list still at the top).
 * `nearest` scrolls only when needed, and the scroll area's scroll-padding keeps the row below the sticky
 * header. jsdom has no scrollIntoView, hence the optional call.
 */
function focusInView(element: HTMLTableRowElement) {
  element.focus({ preventScroll: true });
  element.scrollIntoView?.({ block: 'nearest' });
}
