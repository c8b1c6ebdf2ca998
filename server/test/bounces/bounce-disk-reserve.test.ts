/**
 * The bounce listener keeps the last of the disk for delivery outcomes (docs/bounces.md#limits): while the store has
 * less room than the intake reserve it answers 452 at MAIL FROM, so the report is never uploaded. The embedded store
 * only: the room is made small with SQLite's max_page_count, as server/test/faults/disk-full.test.ts does (on
 * PostgreSQL the database server manages its disk), so this file runs in the SQLite half (vitest.config.ts).
 */
import { MailStatus } from '@outbox/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTAKE_RESERVE_BYTES } from '../../src/store/space-reserve.js';
import { startTestRelay, type TestRelay } from '../support/test-relay.js';
import { dsn, sendSmtp, startBounceOutbox, type BounceOutbox, reportCountsOfMail } from './bounce-support.js';

let relay: TestRelay;
let outbox: BounceOutbox;
let bouncePort: number;

beforeAll(async () => {
  relay = await startTestRelay();
  outbox = await startBounceOutbox({ RELAY_URL: relay.url, DATABASE_URL: '' });
  bouncePort = outbox.bouncePort;
});

afterAll(async () => {
  await outbox?.stop();
  await relay?.close();
});

const db = () => outbox.running.store.db;
const returnPathOf = (id: number) => outbox.returnPathOf(id);

async function sentMail(to: string): Promise<number> {
  const id = await outbox.submit([to]);
  await outbox.waitForStatus(id, MailStatus.ProviderSent);
  return id;
}

function hardBounce(returnPath: string, address: string, diagnostic: string): string {
  return dsn({ returnPath, recipients: [{ address, action: 'failed', status: '5.1.1', diagnostic }] });
}

const countsOfMail = (id: number) => reportCountsOfMail(db(), id);

describe('the disk reserve', () => {
  it('while the store has less room than the intake reserve, the listener answers 452 4.3.1 at MAIL FROM; after, 250', async () => {
    const id = await sentMail('full@example.net');
    const returnPath = await returnPathOf(id);
    const message = { from: '', to: [returnPath], raw: hardBounce(returnPath, 'full@example.net', '550 5.1.1 unknown') };
    const pragma = async (statement: string) =>
      Object.values((await sql.raw<Record<string, number>>(`pragma ${statement}`).execute(db())).rows[0]!)[0]!;
    const pageSize = await pragma('page_size');
    // Room for less than the reserve: the store may grow by half of it.
    await pragma(`max_page_count = ${(await pragma('page_count')) + INTAKE_RESERVE_BYTES / pageSize / 2}`);
    try {
      await new Promise((resolve) => setTimeout(resolve, 250)); // the reserve's last measurement stands 200 ms
      const refused = await sendSmtp(bouncePort, message);
      expect(refused.last).toMatch(/^452 4\.3\.1 Insufficient system storage/);
      expect(refused.replies).toHaveLength(3); // banner, EHLO, MAIL FROM: the report itself was never sent
      expect(await countsOfMail(id)).toEqual({ reports: 0, bouncedEvents: 0, applicationEvents: 0 });
    } finally {
      await pragma('max_page_count = 1073741823');
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect((await sendSmtp(bouncePort, message)).last).toMatch(/^250 OK: report \d+ kept/);
    expect(await countsOfMail(id)).toEqual({ reports: 1, bouncedEvents: 1, applicationEvents: 1 });
  }, 60_000);
});
