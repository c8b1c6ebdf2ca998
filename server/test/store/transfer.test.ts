/**
 * Export and import in process, into a store of the engine under test: the applications' events travel with
 * the mails, and the import writes mails and counters only through the one writer's checked path
 * (`mailImportWriter`): a mail in no known status refuses the whole import, leaving the store empty.
 */
import { MailStatus } from '@outbox/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailImportWriter } from '../../src/mail/write/import.js';
import { exportStore, importStore } from '../../src/store/transfer.js';
import type { Store } from '../../src/store/connection.js';
import { auth, createTestContext, makeTempDir, openTestStore, testEngine, type TestContext } from '../support/context.js';

let source: TestContext;
let lines: string[];

async function freshStore(): Promise<{ store: Store; dispose(): Promise<void> }> {
  return openTestStore(makeTempDir());
}

const lineIterable = (all: string[]): AsyncIterable<string> => ({
  async *[Symbol.asyncIterator]() {
    yield* all;
  },
});

beforeAll(async () => {
  source = await createTestContext();
  const key = await source.services.auth.createApiKey('shop');
  const body = [1, 2, 3].map((i) => ({
    fromMail: 'shop@example.com',
    to: [{ recipientMail: `r${i}@example.net` }],
    subject: `s${i}`,
    text: 't',
  }));
  const response = await source.app.inject({ method: 'POST', url: '/api/v1/mail', headers: auth(key), payload: JSON.stringify(body) });
  expect(response.statusCode).toBe(202);
  const ids = (response.json() as { data: Array<{ id: number }> }).data.map((m) => m.id);
  await source.services.mails.dequeueMail(ids[0]!, 'operator:alice');
  lines = [];
  await exportStore(source.store, async (line) => {
    lines.push(line);
  });
});

afterAll(() => source.close());

describe('export and import', () => {
  it('carries the mails, their counters and their application events over', async () => {
    const target = await freshStore();
    try {
      const counts = await importStore(target.store, lineIterable(lines), mailImportWriter);
      expect(counts).toMatchObject({ mails: 3, application_events: 4 });
      const events = (store: Store) =>
        store.db.selectFrom('application_events').select(['id', 'type', 'mail_id', 'mail_seq', 'payload']).orderBy('seq').execute();
      expect(await events(target.store)).toEqual(await events(source.store));
      const counters = (store: Store) => store.db.selectFrom('status_counts').selectAll().orderBy('status').execute();
      expect(await counters(target.store)).toEqual(await counters(source.store));
      const seqs = (store: Store) => store.db.selectFrom('mails').select(['id', 'status', 'event_seq']).orderBy('id').execute();
      expect(await seqs(target.store)).toEqual(await seqs(source.store));
      if (testEngine === 'postgres') {
        // The search table (migration 031) is not exported: the import writes it from each mail's text.
        const keys = (store: Store) => store.db.selectFrom('mail_search').selectAll().orderBy('mail_id').execute();
        const written = await keys(source.store);
        expect(written.map((row) => row.keys)).toEqual([
          'opqvex leqnco r1qvex leqnne',
          'opqvex leqnco r2qvex leqnne',
          'opqvex leqnco r3qvex leqnne',
        ]);
        expect(await keys(target.store)).toEqual(written);
      }
    } finally {
      await target.dispose();
    }
  });

  it('refuses a mail in no known status through the checked path, and imports nothing', async () => {
    const tampered = lines.map((line) => {
      const record = JSON.parse(line) as { table?: string; row?: { status?: number } };
      if (record.table === 'mails' && record.row?.status === MailStatus.Queued) record.row.status = 9;
      return JSON.stringify(record);
    });
    const target = await freshStore();
    try {
      await expect(importStore(target.store, lineIterable(tampered), mailImportWriter)).rejects.toThrow(/status 9 is not one of the six/);
      expect(await target.store.db.selectFrom('mails').select('id').execute()).toEqual([]);
      expect(await target.store.db.selectFrom('application_events').select('id').execute()).toEqual([]);
      const counters = await target.store.db.selectFrom('status_counts').select('count').execute();
      expect(counters.every((c) => Number(c.count) === 0)).toBe(true);
    } finally {
      await target.dispose();
    }
  });
});
