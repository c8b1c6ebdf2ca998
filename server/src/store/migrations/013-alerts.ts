import type { Kysely, Migration } from 'kysely';
import type { Engine } from '../connection.js';

// Migrations must not depend on the current Database type, which changes as the schema evolves.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Alert rules (docs/alerts.md). The state lives in the store, not in the evaluating process,
 * so a restart or a hand-over to another instance neither forgets a firing alert nor fires it again.
 *
 * - alert_states: one row per rule, written by the evaluator only. `pending_since` starts the pending period,
 *   `firing_since` the episode (the `since` of alert.firing), `resolved_at` the cooldown; `evaluated_at` lets an
 *   instance that gets the evaluator lock skip a round another instance has just done.
 * - alert_history: every transition with its time, value and threshold, newest read first by (at, id).
 */
export function alertsTables(engine: Engine): Migration {
  return {
    async up(db: AnyDb) {
      await db.schema
        .createTable('alert_states')
        .addColumn('rule', 'text', (c) => c.primaryKey())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('since', 'bigint', (c) => c.notNull())
        .addColumn('pending_since', 'bigint')
        .addColumn('firing_since', 'bigint')
        .addColumn('resolved_at', 'bigint')
        .addColumn('value', 'double precision')
        .addColumn('threshold', 'double precision', (c) => c.notNull())
        .addColumn('summary', 'text', (c) => c.notNull())
        .addColumn('evaluated_at', 'bigint', (c) => c.notNull())
        .addColumn('firings', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await (
        engine === 'sqlite'
          ? db.schema.createTable('alert_history').addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          : db.schema.createTable('alert_history').addColumn('id', 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
      )
        .addColumn('rule', 'text', (c) => c.notNull())
        .addColumn('from_state', 'text', (c) => c.notNull())
        .addColumn('to_state', 'text', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addColumn('value', 'double precision')
        .addColumn('threshold', 'double precision', (c) => c.notNull())
        .addColumn('summary', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('alert_history_at_idx').on('alert_history').columns(['at', 'id']).execute();
    },
    async down(db: AnyDb) {
      await db.schema.dropTable('alert_history').ifExists().execute();
      await db.schema.dropTable('alert_states').ifExists().execute();
    },
  };
}
