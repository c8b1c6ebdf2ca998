/** The typed unique-violation check of each engine, against the real index it guards. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findMailIdsByIdempotencyKey, isIdempotencyKeyConflict } from '../../src/submission/idempotency.repository.js';
import type { NewMail } from '../../src/mail/mail.repository.js';
import { insertMails, type MailToInsert } from '../../src/mail/write/create.js';
import { createTestContext, testEngine, type TestContext } from '../support/context.js';

let context: TestContext;
let apiKeyId: number;

beforeEach(async () => {
  context = await createTestContext();
  const key = await context.services.auth.createApiKey('shop');
  apiKeyId = (await context.services.auth.findApiKeyPrincipal(key))!.id;
});

afterEach(async () => {
  await context.close();
});

const mail = (idempotencyKey: string | null, overrides: Partial<NewMail['row']> = {}): MailToInsert => ({
  row: {
    message_id: `<${Math.random()}@test>`,
    from_name: '',
    from_mail: 'shop@example.com',
    subject: 's',
    received_at: 1,
    last_update_at: 1,
    next_attempt_at: 1,
    provider_reply: null,
    api_key_id: apiKeyId,
    idempotency_key: idempotencyKey,
    ...overrides,
  },
  recipients: [],
  created: { to: 0, at: 1, event: null },
});

async function failureOf(write: () => Promise<unknown>): Promise<unknown> {
  try {
    await write();
  } catch (error) {
    return error;
  }
  throw new Error('expected the write to fail');
}

describe(`idempotency keys on ${testEngine}`, () => {
  it('finds stored keys of this API key only', async () => {
    const [id] = await insertMails(context.store.db, [mail('k1')]);
    expect(await findMailIdsByIdempotencyKey(context.store.db, apiKeyId, ['k1', 'k2'])).toEqual(new Map([['k1', id]]));
    expect(await findMailIdsByIdempotencyKey(context.store.db, apiKeyId + 1, ['k1'])).toEqual(new Map());
  });

  it('recognises a second insert of the same key as an idempotency conflict, by error code', async () => {
    await insertMails(context.store.db, [mail('race')]);
    const error = await failureOf(() => insertMails(context.store.db, [mail('race')]));
    expect(isIdempotencyKeyConflict(error, context.store.engine)).toBe(true);
  });

  it('does not take other failures for one: a NOT NULL violation, or an error without a code', async () => {
    const error = await failureOf(() => insertMails(context.store.db, [mail('x', { from_mail: null as unknown as string })]));
    expect(isIdempotencyKeyConflict(error, context.store.engine)).toBe(false);
    expect(isIdempotencyKeyConflict(new Error('UNIQUE constraint failed: duplicate'), context.store.engine)).toBe(false);
  });
});
