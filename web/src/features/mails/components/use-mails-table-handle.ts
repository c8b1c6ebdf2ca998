import { useEffect, useImperativeHandle, useRef, type Ref, type RefObject } from 'react';
import type { Mail } from '@outbox/contract';

/**
 * Keyboard focus on the rows, for the view around the table. The table knows its rows (elements kept by a
 * ref as they mount, in the order of `mails`), so nobody searches the document for them.
 */
export interface MailsTableHandle {
  /** Focuses the row of a mail, mounting it first if it is out of view; false when the page does not hold it. */
  focusRow: (id: number) => boolean;
  /** Focuses the row that holds the grid's one tab stop. */
  focusTabStop: () => void;
  /**
   * Notes where the row of a mail is now and gives what puts focus back there later: on the same mail's row
   * if it is still shown, else on the row now at its place. Told that the mail left (deleted), it waits
   * until the rows no longer hold it: the reload can reach the table after the action's answer.
   */
  rememberPlace: (id: number) => (mailLeft: boolean) => void;
  /**
   * Before the rows change under the operator (a live update): when focus is on a control inside a row (its
   * button, which a status change can remove), focus goes back to that row if it fell out of the table.
   */
  keepFocusInRow: () => void;
}

/** The table's rows and focus as of its latest render, read when the view calls the handle. */
export interface TableFocusState {
  mails: readonly Mail[];
  focusRowAt: (index: number) => void;
  /** The row last focused, and the row that holds the tab stop (row ids). */
  activeId: string | null;
  tabStopId: string | null;
}

/** Gives the view its MailsTableHandle over the table's latest rows and row elements. */
export function useMailsTableHandle(
  ref: Ref<MailsTableHandle> | undefined,
  mails: readonly Mail[],
  latest: RefObject<TableFocusState>,
  rowElements: RefObject<Map<string, HTMLTableRowElement>>,
) {
  // A return of focus after an action that waits for the rows to change (rememberPlace); true once done.
  const pendingPlace = useRef<(() => boolean) | null>(null);
  useEffect(() => {
    if (pendingPlace.current?.()) pendingPlace.current = null;
  }, [mails]);

  useImperativeHandle(ref, () => {
    const focusRow = (id: number | string) => {
      const index = latest.current.mails.findIndex((mail) => String(mail.id) === String(id));
      if (index < 0) return false;
      latest.current.focusRowAt(index);
      return true;
    };
    return {
      focusRow,
      focusTabStop: () => {
        const { tabStopId: id } = latest.current;
        if (id !== null) focusRow(id);
      },
      rememberPlace: (id) => {
        const index = latest.current.mails.findIndex((mail) => mail.id === id);
        return (mailLeft) => {
          const returnToPlace = () => {
            const { mails: now } = latest.current;
            const stillShown = now.some((mail) => mail.id === id);
            if (stillShown && mailLeft) return false; // the rows are not reloaded yet: try again when they are
            if (stillShown) focusRow(id);
            else {
              const inItsPlace = now[Math.min(Math.max(index, 0), now.length - 1)];
              if (inItsPlace) focusRow(inItsPlace.id);
            }
            return true;
          };
          pendingPlace.current = returnToPlace() ? null : returnToPlace;
        };
      },
      keepFocusInRow: () => {
        const { activeId: id } = latest.current;
        const row = id === null ? undefined : rowElements.current.get(id);
        const active = document.activeElement;
        if (id === null || !row || active === row || !row.contains(active)) return;
        window.requestAnimationFrame(() => {
          if (document.activeElement === document.body || document.activeElement === null) focusRow(id);
        });
      },
    };
  }, [latest, rowElements]);
}
