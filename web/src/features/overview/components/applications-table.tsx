import { useState } from 'react';
import type { Application, Statistics } from '@outbox/contract';
import { formatDate } from '../../../lib/format-date';
import { formatCount, formatPercent } from './format';

export type ApplicationSort = 'name' | 'sent' | 'failure' | 'bounce' | 'complaint' | 'lastUsed';

export interface ApplicationRow {
  id: number;
  name: string;
  revoked: boolean;
  lastUsedAt: string | null;
  /** Undefined while its figures load. */
  totals: Statistics['totals'] | undefined;
}

const COLUMNS: ReadonlyArray<{ sort: ApplicationSort; label: string; numeric: boolean }> = [
  { sort: 'name', label: 'Application', numeric: false },
  { sort: 'sent', label: 'Sent', numeric: true },
  { sort: 'failure', label: 'Failure %', numeric: true },
  { sort: 'bounce', label: 'Bounce %', numeric: true },
  { sort: 'complaint', label: 'Complaint %', numeric: true },
  { sort: 'lastUsed', label: 'Last used', numeric: false },
];

/** A row's value in a sort; null (no rate: nothing sent; never used) sorts last either way. */
function valueOf(row: ApplicationRow, sort: ApplicationSort): string | number | null {
  switch (sort) {
    case 'name':
      return row.name.toLowerCase();
    case 'sent':
      return row.totals?.sent ?? null;
    case 'failure':
      return row.totals?.rates.failure ?? null;
    case 'bounce':
      return row.totals?.rates.bounce ?? null;
    case 'complaint':
      return row.totals?.rates.complaint ?? null;
    case 'lastUsed':
      return row.lastUsedAt === null ? null : Date.parse(row.lastUsedAt);
  }
}

export function sortApplicationRows(rows: ApplicationRow[], sort: ApplicationSort, order: 'asc' | 'desc'): ApplicationRow[] {
  const sign = order === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = valueOf(a, sort);
    const y = valueOf(b, sort);
    if (x === null || y === null) return x === y ? a.id - b.id : x === null ? 1 : -1;
    if (x < y) return -sign;
    if (x > y) return sign;
    return a.id - b.id;
  });
}

export function applicationRowsOf(applications: Application[], totals: Map<number, Statistics['totals']> | undefined): ApplicationRow[] {
  return applications.map((a) => ({
    id: a.id,
    name: a.name,
    revoked: a.revokedAt !== null,
    lastUsedAt: a.lastUsedAt,
    totals: totals?.get(a.id),
  }));
}

/**
 * Every application over the range (docs/console.md §10.21): sent, failure, bounce and complaint rates as the
 * statistics define them, last use. The headers sort (aria-sort); an application's name opens the mails list
 * filtered to it.
 */
export function ApplicationsTable({
  rows,
  onOpen,
}: {
  rows: ApplicationRow[];
  onOpen: (application: { id: number; name: string }) => void;
}) {
  const [sort, setSort] = useState<{ by: ApplicationSort; order: 'asc' | 'desc' }>({ by: 'sent', order: 'desc' });
  const sorted = sortApplicationRows(rows, sort.by, sort.order);
  const sortBy = (by: ApplicationSort) =>
    setSort((current) =>
      current.by === by ? { by, order: current.order === 'asc' ? 'desc' : 'asc' } : { by, order: by === 'name' ? 'asc' : 'desc' },
    );
  return (
    <div className="panel__scroll">
      <table className="panel__table overview-applications">
        <caption>Applications over the range; choose one to see its mails</caption>
        <thead>
          <tr>
            {COLUMNS.map((column) => (
              <th
                key={column.sort}
                scope="col"
                className={column.numeric ? 'overview-number' : undefined}
                aria-sort={sort.by === column.sort ? (sort.order === 'asc' ? 'ascending' : 'descending') : 'none'}
              >
                <button type="button" className="overview-sort" onClick={() => sortBy(column.sort)}>
                  {column.label}
                  <span aria-hidden="true" className="overview-sort__arrow">
                    {sort.by === column.sort ? (sort.order === 'asc' ? '▲' : '▼') : ''}
                  </span>
                </button>
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {sorted.length === 0 ? (
            <tr>
              <td colSpan={COLUMNS.length} className="muted">
                No applications yet.
              </td>
            </tr>
          ) : (
            sorted.map((row) => {
              const at = formatDate(row.lastUsedAt);
              const rate = (value: number | null | undefined) => (row.totals === undefined ? '…' : formatPercent(value ?? null));
              return (
                <tr key={row.id}>
                  <th scope="row">
                    <button type="button" className="overview-link" onClick={() => onOpen({ id: row.id, name: row.name })}>
                      {row.name}
                    </button>
                    {row.revoked ? <span className="muted"> (revoked)</span> : null}
                  </th>
                  <td className="overview-number">{row.totals === undefined ? '…' : formatCount(row.totals.sent)}</td>
                  <td className="overview-number">{rate(row.totals?.rates.failure)}</td>
                  <td className="overview-number">{rate(row.totals?.rates.bounce)}</td>
                  <td className="overview-number">{rate(row.totals?.rates.complaint)}</td>
                  <td>
                    {at ? (
                      <time dateTime={at.utc} title={at.utc}>
                        {at.local}
                      </time>
                    ) : (
                      <span className="muted">never</span>
                    )}
                  </td>
                </tr>
              );
            })
          )}
        </tbody>
      </table>
    </div>
  );
}
