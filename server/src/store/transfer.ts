/**
 * Moving an installation between stores (`npm run outbox -- export` / `import`), e.g. from the embedded
 * SQLite store to PostgreSQL when one machine is no longer enough. The format is JSON lines: a header, then
 * one line per row, table by table, parents first; binary columns as base64. Ids are kept, so links between
 * rows survive. Everything travels but what belongs to one running installation (EXCLUDED_TABLES below:
 * sessions, heartbeats) and what is derived from the rows and rebuilt by the import (status counters, search
 * keys). Secrets travel too (the return-path secret, webhook signing secrets, API key hashes): a bounce for a
 * mail sent before the move still matches, and an endpoint's signatures still verify. Mails and counters are
 * written only through the one writer of statuses (`mailImportWriter` of mail/write/import.ts, passed
 * in by the CLI: store/ imports nothing above it), which checks each mail's status; the other tables go in as
 * they are. A test (test/store/transfer-tables.test.ts) fails when a table of the schema is in neither list.
 */
import { sql } from 'kysely';
import type { DbOrTrx, Store } from './connection.js';
import type { Database } from './schema.js';

export const EXPORT_FORMAT = 'outbox-export';
export const EXPORT_VERSION = 1;

type TableName = keyof Database;

/** Parents before children, so an import never breaks a foreign key. `key` orders the keyset pages. */
export const EXPORTED_TABLES: ReadonlyArray<{ name: TableName; key: string; identity?: true }> = [
  { name: 'operators', key: 'id', identity: true },
  { name: 'api_keys', key: 'id', identity: true },
  { name: 'audit_log', key: 'id', identity: true },
  { name: 'server_secrets', key: 'name' },
  { name: 'mails', key: 'id', identity: true },
  { name: 'mail_queue', key: 'mail_id' },
  { name: 'mail_recipients', key: 'id', identity: true },
  { name: 'mail_contents', key: 'mail_id' },
  { name: 'mail_events', key: 'id', identity: true },
  { name: 'application_events', key: 'seq', identity: true },
  { name: 'suppressions', key: 'id', identity: true },
  { name: 'bounce_reports', key: 'id', identity: true },
  { name: 'webhook_endpoints', key: 'id', identity: true },
  { name: 'webhook_deliveries', key: 'id', identity: true },
  { name: 'webhook_attempts', key: 'id', identity: true },
  { name: 'alert_states', key: 'rule' },
  { name: 'alert_history', key: 'id', identity: true },
  { name: 'statistics_hourly', key: 'id', identity: true },
  { name: 'relays', key: 'id', identity: true },
  { name: 'routes', key: 'id', identity: true },
];

/** Tables an export leaves out, each with why. Every other table of the schema must be in EXPORTED_TABLES. */
export const EXCLUDED_TABLES: Readonly<Record<string, string>> = {
  sessions: 'operators log in again on the new store; a token is bound to the installation that issued it',
  instances: 'heartbeats of the processes running now; the new store gets its own within 5 s',
  status_counts: 'rebuilt from the imported mails, exactly (rebuildStatusCounts)',
  mail_search: "derived from each mail's text; the import writes it (PostgreSQL only)",
  relay_credentials: "relays' logins never leave the store in plain text; set them again after an import (docs/relays.md)",
  relay_health: "the running workers' view of the relays, rows of their heartbeats; the new store's workers write their own",
};

/** How the import writes what only the one writer of statuses may write (mail/write/). */
export interface MailImportWriter {
  insertMails(trx: DbOrTrx, rows: ReadonlyArray<Record<string, unknown>>): Promise<void>;
  /** The queue's rows (migration 022), leases included: the new store shows each mail as the old one did. */
  insertQueueRows(trx: DbOrTrx, rows: ReadonlyArray<Record<string, unknown>>): Promise<void>;
  rebuildStatusCounts(trx: DbOrTrx): Promise<void>;
}
const PAGE = 1000;

function encodeRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) out[column] = Buffer.isBuffer(value) ? { $base64: value.toString('base64') } : value;
  return out;
}

function decodeRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) {
    out[column] =
      value && typeof value === 'object' && '$base64' in value
        ? Buffer.from(String((value as { $base64: string }).$base64), 'base64')
        : value;
  }
  return out;
}

export interface TransferCounts {
  [table: string]: number;
}

/** Writes every table as JSON lines, page by page (keyset on the table's key), so memory stays flat. */
export async function exportStore(store: Store, writeLine: (line: string) => Promise<void>): Promise<TransferCounts> {
  const counts: TransferCounts = {};
  await writeLine(
    JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: new Date().toISOString(), engine: store.engine }),
  );
  for (const { name, key } of EXPORTED_TABLES) {
    counts[name] = 0;
    let after: unknown;
    for (;;) {
      // Table names come from the fixed list above; the dynamic builder keeps one code path for all of them.
      let query = store.db
        .selectFrom(name as 'mails')
        .selectAll()
        .orderBy(sql.ref(key))
        .limit(PAGE);
      if (after !== undefined) query = query.where(sql.ref(key), '>', after as never);
      const rows = (await query.execute()) as unknown as Array<Record<string, unknown>>;
      for (const row of rows) await writeLine(JSON.stringify({ table: name, row: encodeRow(row) }));
      counts[name] += rows.length;
      if (rows.length < PAGE) break;
      after = rows.at(-1)![key];
    }
  }
  return counts;
}

export class ImportError extends Error {}

/**
 * Reads an export into an empty store, in one transaction: it lands whole or not at all. Refuses a store
 * that holds mails already, so two installations are never mixed by accident.
 */
export async function importStore(store: Store, lines: AsyncIterable<string>, writer: MailImportWriter): Promise<TransferCounts> {
  const existing = await store.db.selectFrom('mails').select('id').limit(1).executeTakeFirst();
  if (existing) throw new ImportError('The target store holds mails already; import only into a new, empty store.');
  const counts: TransferCounts = {};
  await store.db.transaction().execute(async (trx) => {
    // What a start of the new store wrote (OUTBOX_ADMIN_USER or the random admin, their audit entries, the
    // return-path secret, alert states) makes way for the exported rows: children first.
    await trx.deleteFrom('sessions').execute();
    for (const { name } of [...EXPORTED_TABLES].reverse())
      if (name !== 'mails' && name !== 'mail_queue') await trx.deleteFrom(name as 'audit_log').execute();
    let header: { format?: string; version?: number } | undefined;
    let batch: Array<Record<string, unknown>> = [];
    let batchTable: TableName | undefined;
    const flush = async () => {
      if (batchTable === 'mails') await writer.insertMails(trx, batch);
      else if (batchTable === 'mail_queue') await writer.insertQueueRows(trx, batch);
      else if (batchTable && batch.length > 0)
        // Any table of EXPORTED_TABLES but mails (checked above); status_counts is never among them.
        await trx
          .insertInto(batchTable as 'mail_events')
          .values(batch as never)
          .execute();
      batch = [];
    };
    let lineNumber = 0;
    for await (const line of lines) {
      lineNumber += 1;
      if (line.trim() === '') continue;
      let record: { table?: TableName; row?: Record<string, unknown>; format?: string; version?: number };
      try {
        record = JSON.parse(line) as typeof record;
      } catch {
        throw new ImportError(`Line ${lineNumber} is not JSON.`);
      }
      if (!header) {
        if (record.format !== EXPORT_FORMAT || record.version !== EXPORT_VERSION)
          throw new ImportError(`Line 1 is not an ${EXPORT_FORMAT} version ${EXPORT_VERSION} header.`);
        header = record;
        continue;
      }
      if (!record.table || !record.row || !EXPORTED_TABLES.some((t) => t.name === record.table))
        throw new ImportError(`Line ${lineNumber} names no known table.`);
      if (record.table !== batchTable || batch.length >= 200) {
        await flush();
        batchTable = record.table;
      }
      batch.push(decodeRow(record.row));
      counts[record.table] = (counts[record.table] ?? 0) + 1;
    }
    await flush();
    if (!header) throw new ImportError('The file is empty.');

    // The counters follow the rows, exactly.
    await writer.rebuildStatusCounts(trx);

    // PostgreSQL's identity sequences do not see explicit ids: move them past the imported ones.
    if (store.engine === 'postgres') {
      for (const { name, key: column } of EXPORTED_TABLES.filter((t) => t.identity)) {
        await sql`select setval(pg_get_serial_sequence(${name}, ${column}), coalesce((select max(${sql.ref(column)}) from ${sql.table(name)}), 0) + 1, false)`.execute(
          trx,
        );
      }
    }
  });
  return counts;
}
