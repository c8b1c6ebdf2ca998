/**
 * Operators' side of the suppression list (docs/api.md#suppressions-apiv1suppressions): list and search, add and remove by hand,
 * CSV export and import. Every change is audit-logged in its own transaction. The submission side is
 * suppression-check.ts with suppressedAmong.
 */
import type { Suppression, SuppressionImportResponse } from '@outbox/contract';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import type { Store } from '../store/connection.js';
import type { SuppressionRow } from '../store/schema.js';
import { suppressionCheckFor } from './suppression-check.js';
import {
  deleteSuppression,
  listedAmong,
  listSuppressionsPage,
  upsertSuppressions,
  type NewSuppression,
  type SuppressionFilter,
} from './suppression.repository.js';

const CSV_CHUNK = 1000;
/** An import larger than this is refused whole: split the file. */
export const MAX_IMPORT_LINES = 100_000;

export interface SuppressionListInput {
  limit?: number | undefined;
  cursor?: string | undefined;
  q?: string | undefined;
}

export interface AddSuppressionInput {
  address: string;
  note?: string | undefined;
  expiresAt?: string | undefined;
}

// Deliberately loose (one @, a dotted domain, no spaces or controls): the list holds what relays were given.
// eslint-disable-next-line no-control-regex -- control characters are exactly what an address must not hold
const ADDRESS = /^[^\s@<>()[\]\\,;:"\x00-\x1f\x7f]{1,64}@[^\s@<>()[\]\\,;:"\x00-\x1f\x7f]+\.[^\s@<>()[\]\\,;:"\x00-\x1f\x7f]+$/;

/** The lower-cased address, or why not. */
export function addressProblem(address: string): string | null {
  const trimmed = address.trim();
  if (trimmed.length === 0) return 'is empty';
  if (trimmed.length > 254) return 'is longer than 254 characters';
  if (!ADDRESS.test(trimmed)) return 'is not an email address (local@domain)';
  return null;
}

/** The expiry as epoch ms, or why not: an expiry must be a date-time in the future. */
export function expiryProblem(expiresAt: string, now: number): { at: number } | { problem: string } {
  const at = Date.parse(expiresAt);
  if (!Number.isFinite(at)) return { problem: 'is not a date-time (ISO 8601, e.g. 2027-01-31T00:00:00Z)' };
  if (at <= now) return { problem: 'is in the past; give a future instant or leave it out' };
  return { at };
}

export function toSuppression(row: SuppressionRow): Suppression {
  return {
    address: row.address,
    reason: row.reason as Suppression['reason'],
    mailId: row.mail_id === null ? null : Number(row.mail_id),
    detail: row.detail,
    note: row.note,
    createdBy: row.created_by,
    createdAt: new Date(Number(row.created_at)).toISOString(),
    expiresAt: row.expires_at === null ? null : new Date(Number(row.expires_at)).toISOString(),
  };
}

function encodeCursor(row: SuppressionRow): string {
  return `${Number(row.created_at)}.${Number(row.id)}`;
}

function decodeCursor(cursor: string): { at: number; id: number } {
  const match = /^(0|[1-9][0-9]{0,15})\.([1-9][0-9]{0,15})$/.exec(cursor);
  if (!match) throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
  return { at: Number(match[1]), id: Number(match[2]) };
}

/** A CSV cell: quoted when needed, and a leading = + - @ defused so that a spreadsheet shows it as text. */
function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export const CSV_HEADER = 'address,reason,mailId,detail,note,createdBy,createdAt,expiresAt';

/**
 * RFC 4180 records (quoted cells may hold commas, quotes and line breaks), with the line each starts on. Stops and
 * returns null at the record past `maxRecords`, so that a body of many short lines is refused before its rows are
 * all built (16 MiB of `,\n` would be 8 M arrays, about 2 GB of heap).
 */
export function parseCsv(text: string, maxRecords = Infinity): { line: number; cells: string[] }[] | null {
  const records: { line: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let cell = '';
  let quoted = false;
  let line = 1;
  let startLine = 1;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const endRecord = () => {
    cells.push(cell);
    if (!(cells.length === 1 && cells[0]!.trim() === '')) records.push({ line: startLine, cells });
    cells = [];
    cell = '';
  };
  for (; i < text.length && records.length <= maxRecords; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else {
        if (c === '\n') line++;
        cell += c;
      }
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      cells.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endRecord();
      line++;
      startLine = line;
    } else cell += c;
  }
  if (cell !== '' || cells.length > 0) endRecord();
  return records.length > maxRecords ? null : records;
}

export function createSuppressionService({ store, clock }: { store: Store; clock: Clock }) {
  const { db } = store;
  const check = suppressionCheckFor(store);

  function toFilter(input: SuppressionListInput): SuppressionFilter {
    return {
      q: input.q?.trim().toLowerCase() || undefined,
      after: input.cursor !== undefined ? decodeCursor(input.cursor) : undefined,
    };
  }

  async function listSuppressions(input: SuppressionListInput) {
    const limit = input.limit ?? 100;
    const rows = await listSuppressionsPage(db, toFilter(input), limit + 1);
    const hasMore = rows.length > limit;
    if (hasMore) rows.pop();
    return { data: rows.map(toSuppression), meta: { nextCursor: hasMore ? encodeCursor(rows.at(-1)!) : null } };
  }

  /** Every matching entry, newest first, one page read at a time as the client takes them. */
  function exportCsv(input: SuppressionListInput): AsyncIterable<string> {
    const filter = toFilter(input);
    return (async function* () {
      yield `${CSV_HEADER}\r\n`;
      for (;;) {
        const rows = await listSuppressionsPage(db, filter, CSV_CHUNK);
        if (rows.length > 0) yield `${rows.map(csvLine).join('\r\n')}\r\n`;
        if (rows.length < CSV_CHUNK) break;
        filter.after = { at: Number(rows.at(-1)!.created_at), id: Number(rows.at(-1)!.id) };
      }
    })();
  }

  function csvLine(row: SuppressionRow): string {
    const s = toSuppression(row);
    return [
      s.address,
      s.reason,
      s.mailId === null ? '' : String(s.mailId),
      s.detail ?? '',
      s.note ?? '',
      s.createdBy,
      s.createdAt,
      s.expiresAt ?? '',
    ]
      .map(csvCell)
      .join(',');
  }

  async function addSuppression(input: AddSuppressionInput, actor: string): Promise<{ suppression: Suppression; created: boolean }> {
    const problem = addressProblem(input.address);
    if (problem) throw badRequest('invalid_address', `address ${problem}.`);
    const now = clock.now();
    let expiresAt: number | null = null;
    if (input.expiresAt !== undefined) {
      const expiry = expiryProblem(input.expiresAt, now);
      if ('problem' in expiry) throw badRequest('invalid_expires_at', `expiresAt ${expiry.problem}.`);
      expiresAt = expiry.at;
    }
    const address = input.address.trim().toLowerCase();
    const entry: NewSuppression = { address, reason: 'manual', note: input.note ?? null, createdBy: actor, at: now, expiresAt };
    const created = await db.transaction().execute(async (trx) => {
      const existed = (await listedAmong(trx, [address])).has(address);
      await upsertSuppressions(trx, [entry]);
      await insertAuditEntries(trx, [
        { at: now, actor, action: 'suppression.add', target: address, after: { note: entry.note, expiresAt: input.expiresAt ?? null } },
      ]);
      return !existed;
    });
    check.added();
    const suppression: Suppression = {
      address,
      reason: 'manual',
      mailId: null,
      detail: null,
      note: entry.note ?? null,
      createdBy: actor,
      createdAt: new Date(now).toISOString(),
      expiresAt: expiresAt === null ? null : new Date(expiresAt).toISOString(),
    };
    return { suppression, created };
  }

  async function removeSuppression(rawAddress: string, actor: string): Promise<void> {
    const address = rawAddress.trim().toLowerCase();
    const removed = await db.transaction().execute(async (trx) => {
      const done = await deleteSuppression(trx, address);
      if (done) await insertAuditEntries(trx, [{ at: clock.now(), actor, action: 'suppression.remove', target: address }]);
      return done;
    });
    if (!removed) throw notFound('suppression_not_found', `${address} is not on the suppression list.`);
    check.removed();
  }

  /**
   * Lines `address,note,expiresAt` (a header line naming the columns may reorder them, so an export comes back in);
   * each line is added or refreshed as `manual`, or refused with its reason. All in one transaction.
   */
  async function importCsv(text: string, actor: string): Promise<SuppressionImportResponse> {
    const records = parseCsv(text, MAX_IMPORT_LINES);
    if (records === null)
      throw badRequest(
        'import_too_large',
        `body has more than ${MAX_IMPORT_LINES} lines; an import takes at most ${MAX_IMPORT_LINES}: split the file.`,
      );
    let columns = { address: 0, note: 1, expiresAt: 2 };
    if (records[0] && records[0].cells.some((c) => c.trim().toLowerCase() === 'address')) {
      const names = records.shift()!.cells.map((c) => c.trim().toLowerCase());
      columns = { address: names.indexOf('address'), note: names.indexOf('note'), expiresAt: names.indexOf('expiresat') };
    }
    const now = clock.now();
    const refused: SuppressionImportResponse['refused'] = [];
    const entries = new Map<string, NewSuppression>();
    for (const { line, cells } of records) {
      const address = (cells[columns.address] ?? '').trim();
      const problem = addressProblem(address);
      if (problem) {
        refused.push({ line, address, reason: `address ${problem}` });
        continue;
      }
      const note = columns.note >= 0 ? (cells[columns.note] ?? '').trim() : '';
      const expiresText = columns.expiresAt >= 0 ? (cells[columns.expiresAt] ?? '').trim() : '';
      let expiresAt: number | null = null;
      if (expiresText !== '') {
        const expiry = expiryProblem(expiresText, now);
        if ('problem' in expiry) {
          refused.push({ line, address, reason: `expiresAt ${expiry.problem}` });
          continue;
        }
        expiresAt = expiry.at;
      }
      const key = address.toLowerCase();
      entries.set(key, { address: key, reason: 'manual', note: note || null, createdBy: actor, at: now, expiresAt });
    }
    const result = await db.transaction().execute(async (trx) => {
      const existing = await listedAmong(trx, [...entries.keys()]);
      await upsertSuppressions(trx, [...entries.values()]);
      const counts = { added: entries.size - existing.size, updated: existing.size, refused };
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'suppression.import',
          target: `${entries.size} addresses`,
          after: { added: counts.added, updated: counts.updated, refused: refused.length },
        },
      ]);
      return counts;
    });
    if (entries.size > 0) check.added();
    return result;
  }

  return { listSuppressions, exportCsv, addSuppression, removeSuppression, importCsv };
}

export type SuppressionService = ReturnType<typeof createSuppressionService>;
