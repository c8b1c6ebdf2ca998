import type { Mail } from '@outbox/contract';
import type { RowSelectionState, Updater } from '@tanstack/react-table';
import type { PageSelection } from './mails-columns';

type OnRowSelectionChange = (updater: Updater<RowSelectionState>) => void;

/** The header checkbox: every row of the page, some, or none; ticking it selects or clears the whole page. */
export function pageSelectionOf(
  mails: readonly Mail[],
  rowSelection: RowSelectionState,
  onRowSelectionChange: OnRowSelectionChange,
): PageSelection {
  const selectedOnPage = mails.reduce((count, mail) => (rowSelection[String(mail.id)] ? count + 1 : count), 0);
  return {
    checked: mails.length > 0 && selectedOnPage === mails.length,
    indeterminate: selectedOnPage > 0 && selectedOnPage < mails.length,
    disabled: mails.length === 0,
    onChange: (checked) =>
      onRowSelectionChange((current) => {
        const next = { ...current };
        for (const mail of mails) {
          if (checked) next[String(mail.id)] = true;
          else delete next[String(mail.id)];
        }
        return next;
      }),
  };
}

/** Selects the row if it was not selected, else unselects it. */
export function toggleRow(onRowSelectionChange: OnRowSelectionChange, rowId: string) {
  onRowSelectionChange((current) => {
    const next = { ...current };
    if (next[rowId]) delete next[rowId];
    else next[rowId] = true;
    return next;
  });
}
