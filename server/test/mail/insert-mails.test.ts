/**
 * insertMails (mail.repository.ts) reuses the SQL text of its multi-row INSERTs. The text depends on the
 * dialect (`?` or `$1`), and one process may hold a store of each engine (the benchmarks compare them in
 * one run): a SQLite store beside the engine under test, written in turns, must each get its own text.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findMailRows, insertMails, listRecipients, type NewMail } from '../../src/mail/mail.repository.js';
import { openStore, type Store } from '../../src/store/connection.js';
import { makeTempDir, openTestStore, testEngine } from '../support/context.js';

let underTest: Awaited<ReturnType<typeof openTestStore>>;
let sqlite: Store;

beforeEach(async () => {
  underTest = await openTestStore(makeTempDir());
  sqlite = await openStore({ dataDir: makeTempDir() });
});

afterEach(async () => {
  await underTest.dispose();
  await sqlite.close();
});

const mail = (i: number): NewMail => ({
  row: {
    message_id: `<m${i}@test>`,
    from_name: '',
    from_mail: 'shop@example.com',
    subject: `mail ${i}`,
    status: 0,
    search_text: `mail ${i}`,
    received_at: i,
    last_update_at: i,
    next_attempt_at: i,
    lease_owner: null,
    lease_expires_at: null,
    provider_reply: null,
    api_key_id: null,
    idempotency_key: null,
  },
  recipients: [
    { kind: 'to', name: 'Ann', address: `ann${i}@example.com` },
    { kind: 'envelope', name: '', address: `ann${i}@example.com` },
  ],
  content: {
    raw: Buffer.from(`Subject: mail ${i}\r\n\r\nx\r\n`),
    textBody: 'x',
    htmlBody: null,
    headersJson: null,
    envelopeFrom: 'shop@example.com',
    sizeBytes: 22,
  },
});

describe(`insertMails on ${testEngine} beside SQLite in one process`, () => {
  it('writes the same batch sizes to both stores in turns, each with its own SQL', async () => {
    for (const [round, store] of [underTest.store, sqlite, underTest.store, sqlite].entries()) {
      const batch = Array.from({ length: 3 }, (_, i) => mail(round * 10 + i));
      const ids = await insertMails(store.db, batch);
      expect(ids).toHaveLength(3);
      const rows = await findMailRows(store.db, ids);
      expect(rows.map((r) => r.subject).sort()).toEqual(batch.map((m) => m.row.subject).sort());
      expect(rows.every((r) => r.first_to_mail.startsWith('ann') && r.recipient_count === 1 && r.provider_sent_at === 0)).toBe(true);
      expect([...(await listRecipients(store.db, ids)).values()].flat()).toHaveLength(3);
    }
  });
});
