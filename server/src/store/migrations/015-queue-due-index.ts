import { sql, type Kysely, type Migration } from 'kysely';
import type { Engine } from '../connection.js';

/**
 * The claim takes due Queued mails oldest first, `order by next_attempt_at, id limit 50`
 * (delivery/delivery.repository.ts). The queue index of 001 held `(status, next_attempt_at)` only, so the
 * order by id could not be read from it: every claim read and sorted every due Queued row (3,000 queued:
 * 2.2 ms of a 6 ms claim on PostgreSQL; a backlog of 100,000 would sort 100,000 rows per batch of 50).
 * With id in the index a claim reads its 50 entries. It replaces the old index, which served nothing else.
 */
export function queueDueIndex(engine: Engine): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.createIndex('mails_queue_due_idx').on('mails').columns(['status', 'next_attempt_at', 'id']).execute();
      await db.schema.dropIndex('mails_queue_idx').execute();
      // As in 014: on SQLite a new index without statistics would look the most selective for any `status = ?`.
      if (engine === 'sqlite') await sql`analyze mails_queue_due_idx`.execute(db);
    },
    async down(db: Kysely<unknown>) {
      await db.schema.createIndex('mails_queue_idx').on('mails').columns(['status', 'next_attempt_at']).execute();
      await db.schema.dropIndex('mails_queue_due_idx').execute();
    },
  };
}
