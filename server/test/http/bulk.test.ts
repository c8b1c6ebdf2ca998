/**
 * POST /api/v1/mail/bulk through the HTTP API on a real store: both forms, every skip reason, the
 * expectedCount refusal, the size limits and bad input. The race against a running worker is bulk-race.test.ts.
 */
import { MailStatus, type BulkResult, type MailListResponse } from '@outbox/contract';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { listAuditEntries } from '../../src/audit/audit.repository.js';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';
import { findStatuses } from '../../src/mail/write/apply.js';
import { seedMails } from '../support/mails.js';

describe('POST /api/v1/mail/bulk', () => {
  let context: TestContext;
  let token: string;
  // One app for the file, its store emptied after each test (TestContext.reset).
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());
  beforeEach(async () => {
    token = await loginAs(context);
  });
  afterEach(() => context.reset());

  const bulk = async (payload: unknown) => {
    const response = await context.app.inject({
      method: 'POST',
      url: '/api/v1/mail/bulk',
      headers: auth(token),
      payload: JSON.stringify(payload),
    });
    return { status: response.statusCode, body: response.json() as { data: BulkResult[]; error?: { code: string; message: string } } };
  };
  const bulkOk = async (payload: unknown): Promise<BulkResult> => {
    const { status, body } = await bulk(payload);
    expect(status, JSON.stringify(body)).toBe(200);
    return body.data[0]!;
  };
  /** As it shows: a leased mail is Processing (mail/leases.ts). */
  const statusOf = async (id: number): Promise<number | null> => (await findStatuses(context.store.db, [id])).get(id) ?? null;
  /** The bulk entries of the audit log, newest first (logins and operator changes are recorded too). */
  const bulkAudit = async () => (await listAuditEntries(context.store.db)).filter((e) => e.action.startsWith('mail.bulk.'));
  const counts = async () => {
    const response = await context.app.inject({ method: 'GET', url: '/api/v1/mail/list?limit=1', headers: auth(token) });
    return (response.json() as MailListResponse).meta.counts;
  };

  it('dequeues by ids: Queued mails move, the rest are skipped under their status or not_found, one audit entry', async () => {
    const [q1, q2, q3, processing, sent] = await seedMails(context.store, [
      { status: MailStatus.Queued },
      { status: MailStatus.Queued },
      { status: MailStatus.Queued },
      { status: MailStatus.Processing },
      { status: MailStatus.ProviderSent },
    ]);
    const missing = sent! + 1000;
    const result = await bulkOk({ action: 'dequeue', ids: [q1, q2, q3, processing, sent, missing] });
    expect(result).toEqual({
      action: 'dequeue',
      done: 3,
      skipped: [
        { reason: 'not_found', count: 1, ids: [missing] },
        { reason: 'processing', count: 1, ids: [processing] },
        { reason: 'provider_sent', count: 1, ids: [sent] },
      ],
    });
    for (const id of [q1!, q2!, q3!]) expect(await statusOf(id)).toBe(MailStatus.Dequeued);
    expect(await statusOf(processing!)).toBe(MailStatus.Processing);
    expect(await counts()).toEqual({ '0': 0, '1': 3, '2': 1, '3': 1, '4': 0, '5': 0 });

    const audit = await bulkAudit();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor: 'operator:ops', action: 'mail.bulk.dequeue', target: '6 mails' });
    expect(JSON.parse(audit[0]!.before_json!)).toEqual({ ids: [q1, q2, q3, processing, sent, missing] });
    expect(JSON.parse(audit[0]!.after_json!)).toMatchObject({
      done: 3,
      skipped: expect.arrayContaining([expect.objectContaining({ reason: 'processing', count: 1 })]),
    });
  });

  it('requeues Dequeued, ProviderError and Error mails; Queued ones are skipped as queued', async () => {
    const [dequeued, providerError, error, queued] = await seedMails(context.store, [
      { status: MailStatus.Dequeued },
      { status: MailStatus.ProviderError },
      { status: MailStatus.Error },
      { status: MailStatus.Queued },
    ]);
    const result = await bulkOk({ action: 'requeue', ids: [dequeued, providerError, error, queued] });
    expect(result).toEqual({ action: 'requeue', done: 3, skipped: [{ reason: 'queued', count: 1, ids: [queued] }] });
    for (const id of [dequeued!, providerError!, error!, queued!]) expect(await statusOf(id)).toBe(MailStatus.Queued);
    expect((await counts())['0']).toBe(4);
  });

  it('deletes finished mails; Queued and Processing mails are skipped and stay', async () => {
    const [dequeued, sent, queued, processing] = await seedMails(context.store, [
      { status: MailStatus.Dequeued },
      { status: MailStatus.ProviderSent },
      { status: MailStatus.Queued },
      { status: MailStatus.Processing },
    ]);
    const result = await bulkOk({ action: 'delete', ids: [dequeued, sent, queued, processing] });
    expect(result.done).toBe(2);
    expect(result.skipped).toEqual([
      { reason: 'processing', count: 1, ids: [processing] },
      { reason: 'queued', count: 1, ids: [queued] },
    ]);
    expect(await statusOf(dequeued!)).toBeNull();
    expect(await statusOf(sent!)).toBeNull();
    expect(await statusOf(queued!)).toBe(MailStatus.Queued);
    expect(await counts()).toEqual({ '0': 1, '1': 0, '2': 1, '3': 0, '4': 0, '5': 0 });
  });

  it('acts on exactly the mails the list shows for the same status, q and date range', async () => {
    const base = Date.parse('2026-11-23T09:00:00Z');
    const mails = Array.from({ length: 40 }, (_, i) => ({
      status: i % 4 === 0 ? MailStatus.Error : MailStatus.ProviderError,
      subject: i % 3 === 0 ? `Invoice 100%_${i}` : `Newsletter ${i}`,
      receivedAt: base + i * 60_000,
    }));
    await seedMails(context.store, mails);
    const filter = {
      status: '4,5',
      q: '  INVOICE 100%_ ',
      receivedFrom: '2026-11-23T09:05:00.000Z',
      receivedTo: '2026-11-23T09:30:00.000Z',
    };
    const listed = await context.app.inject({
      method: 'GET',
      url: `/api/v1/mail/list?status=4,5&q=${encodeURIComponent(filter.q)}`,
      headers: auth(token),
    });
    const inRange = (listed.json() as MailListResponse).data.filter(
      (m) => m.receivedDate! >= filter.receivedFrom && m.receivedDate! < filter.receivedTo,
    );
    expect(inRange.length).toBeGreaterThan(3);

    const result = await bulkOk({ action: 'requeue', filter, expectedCount: inRange.length });
    expect(result).toEqual({ action: 'requeue', done: inRange.length, skipped: [] });
    const queued = await context.store.db.selectFrom('mails').select('id').where('status', '=', MailStatus.Queued).orderBy('id').execute();
    expect(queued.map((r) => r.id)).toEqual(inRange.map((m) => m.id).sort((a, b) => a - b));

    const audit = await bulkAudit();
    expect(audit[0]).toMatchObject({ action: 'mail.bulk.requeue', target: 'filter' });
    expect(JSON.parse(audit[0]!.before_json!)).toEqual({ filter, expectedCount: inRange.length });
  });

  it('a filter action reports skips with exact counts and lists at most 100 ids per reason', async () => {
    await seedMails(context.store, [
      ...Array.from({ length: 150 }, () => ({ status: MailStatus.Processing })),
      ...Array.from({ length: 20 }, () => ({ status: MailStatus.Queued })),
    ]);
    const result = await bulkOk({ action: 'dequeue', filter: {}, expectedCount: 170 });
    expect(result.done).toBe(20);
    expect(result.skipped).toHaveLength(1);
    expect(result.skipped[0]!.reason).toBe('processing');
    expect(result.skipped[0]!.count).toBe(150);
    expect(result.skipped[0]!.ids).toHaveLength(100);
  });

  it('refuses 409 count_changed, moving nothing, when the filter now matches more than expectedCount × 1.1 + 10', async () => {
    await seedMails(
      context.store,
      Array.from({ length: 60 }, () => ({ status: MailStatus.Queued })),
    );
    // 45 × 1.1 + 10 = 59.5 → 59 allowed; 60 match.
    const refused = await bulk({ action: 'dequeue', filter: { status: '0' }, expectedCount: 45 });
    expect(refused.status).toBe(409);
    expect(refused.body.error!.code).toBe('count_changed');
    expect(refused.body.error!.message).toContain('body.expectedCount');
    expect((await counts())['0']).toBe(60);
    expect(await bulkAudit()).toHaveLength(0);

    // 46 × 1.1 + 10 = 60.6 → 60 allowed.
    expect((await bulkOk({ action: 'dequeue', filter: { status: '0' }, expectedCount: 46 })).done).toBe(60);
  });

  it('dryRun answers what would move (per status) and be skipped, by ids or by filter, moving nothing and writing no audit entry', async () => {
    const [queued, dequeued, providerError, processing, sent] = await seedMails(context.store, [
      { status: MailStatus.Queued },
      { status: MailStatus.Dequeued },
      { status: MailStatus.ProviderError },
      { status: MailStatus.Processing },
      { status: MailStatus.ProviderSent },
    ]);
    const before = await counts();
    const missing = sent! + 1000;
    expect(await bulkOk({ action: 'requeue', ids: [queued, dequeued, providerError, processing, sent, missing], dryRun: true })).toEqual({
      action: 'requeue',
      dryRun: true,
      done: 2,
      moving: [
        { reason: 'dequeued', count: 1 },
        { reason: 'provider_error', count: 1 },
      ],
      skipped: [
        { reason: 'not_found', count: 1, ids: [missing] },
        { reason: 'processing', count: 1, ids: [processing] },
        { reason: 'provider_sent', count: 1, ids: [sent] },
        { reason: 'queued', count: 1, ids: [queued] },
      ],
    });
    expect(await bulkOk({ action: 'delete', filter: {}, expectedCount: 5, dryRun: true })).toEqual({
      action: 'delete',
      dryRun: true,
      done: 3,
      moving: [
        { reason: 'dequeued', count: 1 },
        { reason: 'provider_error', count: 1 },
        { reason: 'provider_sent', count: 1 },
      ],
      skipped: [
        { reason: 'processing', count: 1, ids: [processing] },
        { reason: 'queued', count: 1, ids: [queued] },
      ],
    });
    expect(await counts()).toEqual(before);
    expect(await statusOf(sent!)).toBe(MailStatus.ProviderSent);
    expect(await bulkAudit()).toHaveLength(0);
    // The count check is the same as for the real action.
    await seedMails(
      context.store,
      Array.from({ length: 30 }, () => ({ status: MailStatus.Queued })),
    );
    expect((await bulk({ action: 'dequeue', filter: { status: '0' }, expectedCount: 10, dryRun: true })).status).toBe(409);
  });

  it('takes 1,000 ids in one request and refuses 1,001', async () => {
    const ids = await seedMails(
      context.store,
      Array.from({ length: 1000 }, () => ({ status: MailStatus.Queued })),
    );
    const result = await bulkOk({ action: 'dequeue', ids });
    expect(result).toEqual({ action: 'dequeue', done: 1000, skipped: [] });
    expect((await counts())['1']).toBe(1000);
    const tooMany = await bulk({ action: 'delete', ids: [...ids, ids.at(-1)! + 1] });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error!.message).toContain('body.ids');
  });

  it('answers 400 naming the field for bad input, and moves nothing', async () => {
    const [id] = await seedMails(context.store, [{ status: MailStatus.Queued }]);
    const cases: Array<[unknown, string]> = [
      [{ ids: [id] }, 'body.action'],
      [{ action: 'send', ids: [id] }, 'body.action'],
      [{ action: 'dequeue' }, 'body.ids or body.filter'],
      [{ action: 'dequeue', ids: [] }, 'body.ids'],
      [{ action: 'dequeue', ids: [id, id] }, 'body.ids'],
      [{ action: 'dequeue', ids: ['1'] }, 'body.ids[0]'],
      [{ action: 'dequeue', ids: [0] }, 'body.ids[0]'],
      [{ action: 'dequeue', ids: [id], filter: {}, expectedCount: 1 }, 'body.ids and body.filter'],
      [{ action: 'dequeue', ids: [id], expectedCount: 1 }, 'body.expectedCount'],
      [{ action: 'dequeue', filter: {} }, 'body.expectedCount'],
      [{ action: 'dequeue', filter: {}, expectedCount: -1 }, 'body.expectedCount'],
      [{ action: 'dequeue', filter: { status: '7' }, expectedCount: 1 }, 'body.filter.status'],
      [{ action: 'dequeue', filter: { receivedFrom: 'yesterday' }, expectedCount: 1 }, 'body.filter.receivedFrom'],
      [
        { action: 'dequeue', filter: { receivedFrom: '2026-11-23T10:00:00Z', receivedTo: '2026-11-23T09:00:00Z' }, expectedCount: 1 },
        'body.filter.receivedTo',
      ],
      [{ action: 'dequeue', filter: { sender: 'x' }, expectedCount: 1 }, 'body.filter.sender'],
      [{ action: 'dequeue', ids: [id], all: true }, 'body.all'],
    ];
    for (const [payload, field] of cases) {
      const { status, body } = await bulk(payload);
      expect(status, JSON.stringify(payload)).toBe(400);
      expect(body.error!.message, JSON.stringify(payload)).toContain(field);
    }
    expect(await statusOf(id!)).toBe(MailStatus.Queued);
  });

  it('needs an operator token', async () => {
    const response = await context.app.inject({
      method: 'POST',
      url: '/api/v1/mail/bulk',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ action: 'dequeue', ids: [1] }),
    });
    expect(response.statusCode).toBe(401);
  });
});
