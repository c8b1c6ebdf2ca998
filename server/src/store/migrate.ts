/**
 * One migration history for both engines (ARCHITECTURE.md#data-model-and-the-hot-path). Kysely's Migrator runs them in a transaction and,
 * on PostgreSQL, under an advisory lock, so several instances may start at the same moment.
 */
import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Store } from './connection.js';
import { initialSchema } from './migrations/001-initial-schema.js';
import { statusSortIndex } from './migrations/002-status-sort-index.js';
import { searchIndexAndToSort } from './migrations/003-search-index-and-to-sort.js';
import { statusLastUpdateIndex } from './migrations/004-status-last-update-index.js';
import { recipientOutcomes } from './migrations/005-recipient-outcomes.js';
import { applicationEvents } from './migrations/006-application-events.js';
import { webhooks } from './migrations/007-webhooks.js';
import { instancesTable } from './migrations/008-instances.js';
import { applicationReads } from './migrations/010-application-reads.js';
import { bouncesAndSuppressions } from './migrations/011-bounces-and-suppressions.js';
import { alertsTables } from './migrations/013-alerts.js';
import { statusSortIndexes } from './migrations/014-status-sort-indexes.js';
import { queueDueIndex } from './migrations/015-queue-due-index.js';
import { deliveryWrites } from './migrations/016-delivery-writes.js';
import { updateAfterReceipt } from './migrations/017-update-after-receipt.js';
import { statusSearchIndex } from './migrations/018-status-search-index.js';
import { searchPunctuationKeys } from './migrations/019-search-punctuation-keys.js';
import { bounceReportsWithMail } from './migrations/021-bounce-reports-with-mail.js';
import { mailQueue } from './migrations/022-mail-queue.js';
import { applications } from './migrations/023-applications.js';
import { statistics } from './migrations/024-statistics.js';
import { contentRetention } from './migrations/025-content-retention.js';
import { scheduledSends } from './migrations/026-scheduled-sends.js';
import { lanes } from './migrations/027-lanes.js';
import { relays } from './migrations/029-relays.js';
import { relayHealth } from './migrations/030-relay-health.js';
import { searchApart } from './migrations/031-search-apart.js';

export function migrations(store: Pick<Store, 'engine'>): Record<string, Migration> {
  return {
    '001-initial-schema': initialSchema(store.engine),
    '002-status-sort-index': statusSortIndex(),
    '003-search-index-and-to-sort': searchIndexAndToSort(store.engine),
    '004-status-last-update-index': statusLastUpdateIndex(),
    '005-recipient-outcomes': recipientOutcomes(),
    '006-application-events': applicationEvents(store.engine),
    '007-webhooks': webhooks(store.engine),
    '008-instances': instancesTable(),
    '010-application-reads': applicationReads(),
    '011-bounces-and-suppressions': bouncesAndSuppressions(store.engine),
    '013-alerts': alertsTables(store.engine),
    '014-status-sort-indexes': statusSortIndexes(store.engine),
    '015-queue-due-index': queueDueIndex(store.engine),
    '016-delivery-writes': deliveryWrites(store.engine),
    '017-update-after-receipt': updateAfterReceipt(),
    '018-status-search-index': statusSearchIndex(store.engine),
    '019-search-punctuation-keys': searchPunctuationKeys(store.engine),
    '021-bounce-reports-with-mail': bounceReportsWithMail(store.engine),
    '022-mail-queue': mailQueue(store.engine),
    '023-applications': applications(store.engine),
    '024-statistics': statistics(store.engine),
    '025-content-retention': contentRetention(),
    '026-scheduled-sends': scheduledSends(store.engine),
    '027-lanes': lanes(store.engine),
    '029-relays': relays(store.engine),
    '030-relay-health': relayHealth(),
    '031-search-apart': searchApart(store.engine),
  };
}

export async function migrateToLatest(store: Store): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(store) };
  const migrator = new Migrator({ db: store.db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error');
    const cause = error instanceof Error ? error.message : String(error);
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${cause}`, { cause: error });
  }
}
