import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';
import { punctuationWindowsOf } from '../punctuation-keys.js';

/** Mails read and given their keys per statement when the table is filled (an upgrade of a full store). */
const FILL_BATCH = 5_000;

/**
 * PostgreSQL: a trigram index of each mail's punctuation windows (`store/punctuation-keys.ts`), so that a search
 * with punctuation (`7/2`, `n.jensen`, `clav!`) is looked up by it, not by the words around it. Its own table,
 * written once with the mail and removed with it: a status change rewrites every index entry of the `mails`
 * row (never a HOT update), and a second trigram index there would cost delivery what the first already does.
 * Existing mails are given their keys here, in batches by id. On SQLite nothing changes: FTS5's trigrams hold
 * punctuation.
 */
export function searchPunctuationKeys(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`create table mail_search_keys (
        mail_id bigint primary key references mails (id) on delete cascade,
        keys text not null
      )`.execute(db);
      for (let after = 0; ;) {
        const { rows } = await sql<{ id: string; search_text: string }>`
          select id, search_text from mails where id > ${after} order by id limit ${FILL_BATCH}`.execute(db);
        if (rows.length === 0) break;
        await sql`insert into mail_search_keys (mail_id, keys)
          select * from unnest(${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => punctuationWindowsOf(r.search_text))}::text[])`.execute(
          db,
        );
        after = Number(rows.at(-1)!.id);
      }
      await sql`create index mail_search_keys_trgm_idx on mail_search_keys using gin (keys gin_trgm_ops)`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`drop table mail_search_keys`.execute(db);
    },
  };
}
