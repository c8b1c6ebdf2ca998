import { useMemo, type CSSProperties } from 'react';
import type { Mail } from '@outbox/contract';
import { createColumnHelper, getCoreRowModel, useReactTable, type ColumnDef, type SortingState } from '@tanstack/react-table';
import type { ListSort, SortOrder } from '../api/list-mails';
import { MAIL_COLUMNS, columnOf, type MailColumn, type PageSelection } from './mails-columns';
import { HEADER_HEIGHT, MAX_COLUMN_SIZE, MIN_COLUMN_SIZE, ROW_HEIGHT } from './table-layout';
import { gridTemplateOf, type useTableLayout } from './use-table-layout';

const NO_MAILS: Mail[] = [];

const columnHelper = createColumnHelper<Mail>();

/**
 * The columns as TanStack Table knows them: headers, sizes and order (it sizes, resizes and orders them). The
 * table is given no rows: the body's cells are drawn by MailRow from the same columns' `cell`, not through
 * its per-row model, which at 50 rows was a third of the script time between an answer and its rows
 * (bench/console-latency.ts).
 */
const TABLE_COLUMNS = MAIL_COLUMNS.map((column: MailColumn) =>
  column.kind === 'fixed'
    ? columnHelper.display({
        id: column.id,
        header: column.header,
        size: column.width,
        minSize: column.width,
        maxSize: column.width,
        enableSorting: false,
        enableResizing: false,
      })
    : columnHelper.display({ id: column.id, header: column.header, size: column.size, minSize: MIN_COLUMN_SIZE, maxSize: MAX_COLUMN_SIZE }),
) as ColumnDef<Mail, unknown>[];

/**
 * The mails table's columns: TanStack Table sizes, resizes and orders them and draws their headers. It gets no
 * rows: the body is drawn from the page's mails, and building its row model only fed the header checkbox.
 * Returns the headers, the grid's style and the columns of every row in the headers' order.
 */
export function useColumnTable(sort: ListSort, order: SortOrder, layout: ReturnType<typeof useTableLayout>, pageSelection: PageSelection) {
  const sorting: SortingState = useMemo(() => [{ id: sort, desc: order === 'desc' }], [sort, order]);
  const table = useReactTable({
    data: NO_MAILS,
    columns: TABLE_COLUMNS,
    getCoreRowModel: getCoreRowModel(),
    manualPagination: true,
    manualSorting: true,
    enableSortingRemoval: false,
    columnResizeMode: 'onChange',
    state: { sorting, columnOrder: layout.columnOrder, columnSizing: layout.sizing },
    onColumnSizingChange: layout.onSizingChange,
    meta: { pageSelection },
  });

  const headers = table.getFlatHeaders();
  const isResizing = Boolean(table.getState().columnSizingInfo.isResizingColumn);
  const gridTemplateColumns = gridTemplateOf(headers.map((header) => ({ id: header.column.id, size: header.getSize() })));
  const minWidth = headers.reduce((sum, header) => sum + header.getSize(), 0);
  // The grid's template and the row heights are custom properties of the table, read by every row in the
  // stylesheet: a column resize changes one property; a row's own style is only its place (--row-index).
  const tableStyle = {
    minWidth,
    '--mail-columns': gridTemplateColumns,
    '--row-height': `${ROW_HEIGHT}px`,
    '--header-height': `${HEADER_HEIGHT}px`,
  } as CSSProperties;

  // The cells of every row, in the columns' order (a new array only when the order changes).
  const columnKey = headers.map((header) => header.column.id).join(',');
  const columns = useMemo(() => columnKey.split(',').flatMap((id) => columnOf(id) ?? []), [columnKey]);

  return { headers, isResizing, tableStyle, columns };
}
