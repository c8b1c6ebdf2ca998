/**
 * Reading the audit log: who did what, when, to which mails, with what outcome. Entries
 * are written where the action happens (auth.service.ts, mail-actions.ts, bulk-actions.ts), in the same
 * transaction as the action; this only reads them, as pages or as CSV.
 */
import type { AuditEntry } from '@outbox/contract';
import { badRequest } from '../errors.js';
import type { Store } from '../store/connection.js';
import { listAuditPage, type AuditFilter, type AuditRow } from './audit.repository.js';
import { decodeCursor, encodeCursor, isWholeNumber } from '../list/cursor.js';

/** CSV export stops here: a spreadsheet of more is no longer read by a person; narrow the time range. */
export const MAX_CSV_ROWS = 50_000;
const CSV_CHUNK = 1000;

export interface AuditListInput {
  limit?: number | undefined;
  cursor?: string | undefined;
  operator?: string | undefined;
  action?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function toEntry(row: AuditRow): AuditEntry {
  return {
    id: Number(row.id),
    at: new Date(Number(row.at)).toISOString(),
    actor: row.actor,
    action: row.action,
    target: row.target,
    before: parseJson(row.before_json),
    after: parseJson(row.after_json),
  };
}

/** The last entry of a page, (at, id), in the lists' one cursor format (list/cursor.ts). */
function cursorAfter(row: AuditRow): string {
  return encodeCursor([Number(row.at), Number(row.id)]);
}

function decodeAuditCursor(cursor: string): { at: number; id: number } {
  const values = decodeCursor(cursor, [isWholeNumber(0), isWholeNumber(1)]);
  if (!values) throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
  return { at: values[0] as number, id: values[1] as number };
}

/** A CSV cell: quoted when needed, and a leading = + - @ defused so that a spreadsheet shows it as text. */
function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function createAuditService({ store }: { store: Store }) {
  const { db } = store;

  function toFilter(input: AuditListInput): AuditFilter {
    const from = input.from !== undefined ? Date.parse(input.from) : undefined;
    const to = input.to !== undefined ? Date.parse(input.to) : undefined;
    if (from !== undefined && to !== undefined && from >= to)
      throw badRequest('invalid_date_range', 'query.to must be later than query.from.');
    return {
      actor: input.operator !== undefined ? `operator:${input.operator}` : undefined,
      action: input.action || undefined,
      from,
      to,
      after: input.cursor !== undefined ? decodeAuditCursor(input.cursor) : undefined,
    };
  }

  async function listAudit(input: AuditListInput): Promise<{ data: AuditEntry[]; meta: { nextCursor: string | null } }> {
    const limit = input.limit ?? 100;
    const rows = await listAuditPage(db, toFilter(input), limit + 1);
    const hasMore = rows.length > limit;
    if (hasMore) rows.pop();
    return { data: rows.map(toEntry), meta: { nextCursor: hasMore ? cursorAfter(rows.at(-1)!) : null } };
  }

  /**
   * Every matching entry (up to MAX_CSV_ROWS), newest first, as CSV text one page at a time: a page is read
   * only when the answer has taken the one before, so memory holds one page (a 50,000-row export with large
   * before/after values was built whole before, up to ~400 MB). The filter is checked here, before the
   * first byte, so a bad one is still a 400.
   */
  function exportAuditCsv(input: AuditListInput): AsyncIterable<string> {
    const filter = toFilter(input);
    return (async function* () {
      yield 'id,at,actor,action,target,before,after\r\n';
      for (let total = 0; total < MAX_CSV_ROWS;) {
        const rows = await listAuditPage(db, filter, Math.min(CSV_CHUNK, MAX_CSV_ROWS - total));
        if (rows.length > 0) yield `${rows.map(csvLine).join('\r\n')}\r\n`;
        total += rows.length;
        if (rows.length < CSV_CHUNK) break;
        filter.after = { at: Number(rows.at(-1)!.at), id: Number(rows.at(-1)!.id) };
      }
    })();
  }

  function csvLine(row: AuditRow): string {
    const entry = toEntry(row);
    const json = (value: unknown) => (value === null ? '' : JSON.stringify(value));
    return [String(entry.id), entry.at, entry.actor, entry.action, entry.target ?? '', json(entry.before), json(entry.after)]
      .map(csvCell)
      .join(',');
  }

  return { listAudit, exportAuditCsv };
}

export type AuditService = ReturnType<typeof createAuditService>;
