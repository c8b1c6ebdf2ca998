import { Fragment, type ReactNode } from 'react';
import { LoadMoreButton, type MorePages } from './load-more-button';

/** One column of a side panel's table: declared once, its header and its cell together. */
export interface PanelColumn<Row> {
  id: string;
  header: string;
  /** The header is for screen readers only (a column of row buttons). */
  isHeaderHidden?: boolean;
  /** The class of its header and of each of its cells (alignment, width, wrapping). */
  className?: string;
  cell: (row: Row) => ReactNode;
}

/** The part of a TanStack query the table reads to say why it has no rows. */
export interface PanelTableLoad {
  isPending: boolean;
  isError: boolean;
}

export interface PanelTableProps<Row> {
  /** The table's accessible name, and its scrolling region's. */
  label: string;
  columns: readonly PanelColumn<Row>[];
  rows: readonly Row[];
  rowKey: (row: Row) => string | number;
  load: PanelTableLoad;
  /** What the table says with no rows once loaded. */
  emptyText: string;
  /** What it says when the rows could not be loaded. */
  errorText: string;
  rowClassName?: (row: Row) => string | undefined;
  /** A row of its own under a row, across every column (a delivery's attempts); `id` for the row's aria-controls. */
  renderDetail?: (row: Row) => { id: string; content: ReactNode } | null;
  /** More classes for the table (besides `panel__table`) and its scrolling region (instead of `panel__scroll`). */
  className?: string;
  scrollClassName?: string;
  /** Under the table, inside the scrolling region: a Load more button. */
  children?: ReactNode;
}

/**
 * The table of a side panel (applications, webhooks and their deliveries, suppressions, unmatched reports, audit
 * log, instances, relays): a real table with column headers, named for screen readers, inside a scrolling region
 * that the keyboard reaches, with one line saying why it is empty (loading, failed, nothing yet). Each panel declares
 * its columns once, header and cell together, as the mails table's column model does. Not TanStack Table: these
 * tables hold tens of rows, unsorted and never resized, so its row model would only re-key the rows; and its
 * flexRender turns a cell function into a component, which, declared anew each render with the panel's state in
 * it, remounts its cell and loses the focus and text of a field typed there. Cells are called as plain functions.
 */
export function PanelTable<Row>({
  label,
  columns,
  rows,
  rowKey,
  load,
  emptyText,
  errorText,
  rowClassName,
  renderDetail,
  className,
  scrollClassName = 'panel__scroll',
  children,
}: PanelTableProps<Row>) {
  return (
    <div className={scrollClassName} tabIndex={0} role="region" aria-label={label}>
      <table className={`panel__table${className ? ` ${className}` : ''}`} aria-label={label}>
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column.id} scope="col" className={column.className}>
                {column.isHeaderHidden ? <span className="visually-hidden">{column.header}</span> : column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const detail = renderDetail?.(row) ?? null;
            return (
              <Fragment key={rowKey(row)}>
                <tr className={rowClassName?.(row)}>
                  {columns.map((column) => (
                    <td key={column.id} className={column.className}>
                      {column.cell(row)}
                    </td>
                  ))}
                </tr>
                {detail ? (
                  <tr id={detail.id} className="panel__detail-row">
                    <td colSpan={columns.length}>{detail.content}</td>
                  </tr>
                ) : null}
              </Fragment>
            );
          })}
          {rows.length === 0 ? (
            <tr>
              <td colSpan={columns.length} className="muted">
                {load.isPending ? 'Loading…' : load.isError ? errorText : emptyText}
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      {children}
    </div>
  );
}

/** A TanStack infinite query of pages of rows, as the paged table reads it. */
export interface PanelPages<Row> extends PanelTableLoad, MorePages {
  data?: { pages: readonly { data: readonly Row[] }[] } | undefined;
}

export type PagedPanelTableProps<Row> = Omit<PanelTableProps<Row>, 'rows' | 'load' | 'children'> & { pages: PanelPages<Row> };

/**
 * The table of a side panel whose rows come a page at a time (audit log, deliveries, suppressions, unmatched
 * reports): the rows of every page loaded, and Load more under them while a next page exists.
 */
export function PagedPanelTable<Row>({ pages, ...table }: PagedPanelTableProps<Row>) {
  return (
    <PanelTable {...table} rows={pages.data?.pages.flatMap((page) => page.data) ?? []} load={pages}>
      <LoadMoreButton pages={pages} />
    </PanelTable>
  );
}
