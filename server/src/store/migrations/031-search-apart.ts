import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';
import { punctuationWindowsOf } from '../punctuation-keys.js';

/** Mails given their search row per statement when some have none (a store written around migration 019). */
const FILL_BATCH = 5_000;

/**
 * PostgreSQL: the search's trigram index leaves `mails` for a table of its own, written once with the mail and
 * never updated (`mail_search`: the mail's search text and its punctuation windows, which had a table of their own
 * since migration 019).
 *
 * Why: an outcome changes a mail's status and dates, which `mails`' list indexes hold, so its update is never HOT
 * and adds an entry to every index of the row — the trigram GIN's ~100 of them (one per trigram) included. At
 * 30,000 mails an update of 46 mails, as one outcome commit writes them, took 10.2 ms with the GIN and 5.8 ms
 * without (docs/benchmarks.md#the-search-index-apart-from-the-record): the GIN was 43 % of the delivery's write
 * of the record, and its pending list, merged into the index by whichever statement overflows it, stalled list
 * requests and outcome commits alike. Apart, the trigrams are written at intake only.
 *
 * What the list gives up: the GIN held the status beside the trigrams (migration 018), so a search with a status
 * filter now joins the search's matches to the status by id (list-matches.repository.ts `termsOf`). The record
 * keeps its `search_text`: a walk of a sort's index checks each row's text where it reads the row.
 *
 * On SQLite nothing changes: FTS5's trigram table has always been apart from `mails`, and SQLite updates only the
 * indexes whose columns change.
 */
export function searchApart(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`create table mail_search (
        mail_id bigint primary key references mails (id) on delete cascade,
        search_text text not null,
        keys text not null
      )`.execute(db);
      await sql`insert into mail_search (mail_id, search_text, keys)
        select m.id, m.search_text, k.keys from mails m join mail_search_keys k on k.mail_id = m.id`.execute(db);
      // A mail without punctuation windows (none should exist: migration 019 gave every mail its own) gets them here.
      for (;;) {
        const { rows } = await sql<{ id: string; search_text: string }>`
          select id, search_text from mails m where not exists (select 1 from mail_search s where s.mail_id = m.id)
          order by id limit ${FILL_BATCH}`.execute(db);
        if (rows.length === 0) break;
        await sql`insert into mail_search (mail_id, search_text, keys)
          select * from unnest(${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => r.search_text)}::text[],
            ${rows.map((r) => punctuationWindowsOf(r.search_text))}::text[])`.execute(db);
      }
      await sql`drop table mail_search_keys`.execute(db);
      await sql`create index mail_search_text_trgm_idx on mail_search using gin (search_text gin_trgm_ops)`.execute(db);
      await sql`create index mail_search_keys_trgm_idx on mail_search using gin (keys gin_trgm_ops)`.execute(db);
      // As `mails.search_text` had (migration 003): a finer histogram makes PostgreSQL's estimate of a pattern's matches better.
      await sql`alter table mail_search alter column search_text set statistics 1000`.execute(db);
      await sql`drop index mails_status_search_idx`.execute(db);
      await sql`analyze mail_search`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      if (engine !== 'postgres') return;
      await sql`create index mails_status_search_idx on mails using gin (status, search_text gin_trgm_ops)`.execute(db);
      await sql`create table mail_search_keys (
        mail_id bigint primary key references mails (id) on delete cascade,
        keys text not null
      )`.execute(db);
      await sql`insert into mail_search_keys (mail_id, keys) select mail_id, keys from mail_search`.execute(db);
      await sql`drop table mail_search`.execute(db);
      await sql`create index mail_search_keys_trgm_idx on mail_search_keys using gin (keys gin_trgm_ops)`.execute(db);
    },
  };
}
