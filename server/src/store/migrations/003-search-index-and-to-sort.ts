import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';
import { createTrustedExtension } from './extensions.js';

/**
 * A text search that does not read the table, and the list sorted by To.
 *
 * - Search: `search_text` (lower-cased sender, To/Cc/Bcc names and addresses, subject) gets a trigram
 *   index. On SQLite an FTS5 table with the trigram tokenizer, kept by triggers; `detail=none` stores only
 *   which mails hold a trigram (no positions), so the index is a fraction of the size and the repository
 *   ANDs the trigrams of the query and rechecks candidates with LIKE, as pg_trgm does. On PostgreSQL a GIN
 *   index with `gin_trgm_ops` (extension pg_trgm, which serves `LIKE '%…%'` directly).
 * - To sort: `first_to_mail`, the first To recipient's address ('' when there is none), copied from
 *   mail_recipients at insert, with a `(first_to_mail, id)` index like every other sort.
 * - Date range: `(received_at, id)` and `(status, received_at, id)` exist since 001; nothing to add.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations must not depend on the current Database type
type AnyDb = Kysely<any>;

export function searchIndexAndToSort(engine: Engine): Migration {
  return {
    async up(db: AnyDb) {
      await db.schema
        .alterTable('mails')
        .addColumn('first_to_mail', 'text', (c) => c.notNull().defaultTo(''))
        .execute();
      await sql`
        update mails set first_to_mail = coalesce(
          (select r.address from mail_recipients r
            where r.mail_id = mails.id and r.kind = 'to' order by r.position limit 1),
          '')`.execute(db);
      await db.schema.createIndex('mails_first_to_idx').on('mails').columns(['first_to_mail', 'id']).execute();

      if (engine === 'sqlite') {
        await sql`create virtual table mails_fts using fts5(
            search_text, content='mails', content_rowid='id', tokenize='trigram', detail=none)`.execute(db);
        await sql`create trigger mails_fts_insert after insert on mails begin
            insert into mails_fts(rowid, search_text) values (new.id, new.search_text);
          end`.execute(db);
        await sql`create trigger mails_fts_delete after delete on mails begin
            insert into mails_fts(mails_fts, rowid, search_text) values ('delete', old.id, old.search_text);
          end`.execute(db);
        await sql`create trigger mails_fts_update after update of search_text on mails begin
            insert into mails_fts(mails_fts, rowid, search_text) values ('delete', old.id, old.search_text);
            insert into mails_fts(rowid, search_text) values (new.id, new.search_text);
          end`.execute(db);
        await sql`insert into mails_fts(mails_fts) values ('rebuild')`.execute(db);
      } else {
        await createTrustedExtension(db, 'pg_trgm', "trigram index for the list's text search");
        await sql`create index mails_search_trgm_idx on mails using gin (search_text gin_trgm_ops)`.execute(db);
        // The planner picks between this index and walking a sort index from its estimate of how many rows a
        // pattern matches; a finer histogram of search_text makes that estimate better.
        await sql`alter table mails alter column search_text set statistics 1000`.execute(db);
      }
    },
    async down(db: AnyDb) {
      if (engine === 'sqlite') {
        for (const trigger of ['mails_fts_insert', 'mails_fts_delete', 'mails_fts_update']) {
          await sql`drop trigger if exists ${sql.id(trigger)}`.execute(db);
        }
        await sql`drop table if exists mails_fts`.execute(db);
      } else {
        await sql`drop index if exists mails_search_trgm_idx`.execute(db);
      }
      await db.schema.dropIndex('mails_first_to_idx').execute();
      await db.schema.alterTable('mails').dropColumn('first_to_mail').execute();
    },
  };
}
