import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connection.js';

// Migrations must not depend on the current Database type, which changes as the schema evolves.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** The counters of `statistics_hourly`, in the order of the answer (contract/src/statistics.ts). */
const COUNTERS = ['accepted', 'sent', 'deferred', 'failed', 'bounced', 'complained', 'suppressed', 'dequeued'];
/** One column per latency bucket (contract's LATENCY_BUCKET_BOUNDS_MS and the bucket beyond): latency_00 … latency_19. */
const LATENCY_BUCKETS = 20;

/**
 * Statistics that outlive the mails (docs/api.md#statistics-get-apiv1stats): one row per
 * (application, hour) with the eight counters and the accepted → ProviderSent latency histogram, upserted by the one
 * writer in the transaction of the change it counts (mail/write/apply.ts), kept 13 months whatever RETENTION_DAYS
 * says. `application_id` is the API key's id, 0 for mails no API key submitted, and -1 for the row of every
 * application together (written in the same statement), so an operator's range reads one row per hour whatever the
 * number of applications.
 *
 * The histogram is columns of the same row, not a table of its own: one upsert per transaction writes everything,
 * and a read sums one row per hour. The `id` only gives export its single-column key (store/transfer.ts); the
 * unique (application_id, hour) index is the upsert's conflict target and the reads' range; (hour) serves the
 * 13-month purge.
 */
export function statistics(engine: Engine): Migration {
  return {
    async up(db: AnyDb) {
      let table = (
        engine === 'sqlite'
          ? db.schema.createTable('statistics_hourly').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          : db.schema.createTable('statistics_hourly').addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
      )
        .addColumn('application_id', 'bigint', (c) => c.notNull())
        .addColumn('hour', 'bigint', (c) => c.notNull());
      for (const counter of COUNTERS) table = table.addColumn(counter, 'bigint', (c) => c.notNull().defaultTo(0));
      for (let i = 0; i < LATENCY_BUCKETS; i++)
        table = table.addColumn(`latency_${String(i).padStart(2, '0')}`, 'bigint', (c) => c.notNull().defaultTo(0));
      await table.execute();
      await db.schema
        .createIndex('statistics_hourly_application_hour_idx')
        .on('statistics_hourly')
        .columns(['application_id', 'hour'])
        .unique()
        .execute();
      await db.schema.createIndex('statistics_hourly_hour_idx').on('statistics_hourly').column('hour').execute();
    },
    async down(db: AnyDb) {
      await db.schema.dropTable('statistics_hourly').ifExists().execute();
    },
  };
}
