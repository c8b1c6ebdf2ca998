/** The outcome policy alone: what each attempt result means for the mail, with no store and no relay. */
import { MailStatus } from '@outbox/contract';
import { describe, expect, it } from 'vitest';
import { decideAttempt, decideOutcome, type AttemptedMail, type RecipientState } from '../../src/delivery/outcome-policy.js';
import { createRetryPolicy } from '../../src/delivery/retry-policy.js';
import type { DeliveryOutcome } from '../../src/delivery/relay-transport.js';

const MINUTE = 60_000;
const receivedAt = Date.UTC(2026, 10, 23, 9);
const at = receivedAt + 5_000;
const policy = createRetryPolicy({ maxAttempts: 3, baseDelayMs: MINUTE, jitter: 0, maxAgeMs: 24 * 60 * MINUTE });
const mail = (attempts = 1): AttemptedMail => ({ id: 7, attempts, received_at: receivedAt, lease_expires_at: at + MINUTE });
const decide = (outcome: DeliveryOutcome, attempts = 1) => decideOutcome({ mail: mail(attempts), outcome, at }, policy, 'w1');

describe('decideOutcome', () => {
  it('sent → ProviderSent with the send time and reply, refused recipients in the detail, only for the claim that sent it', () => {
    const transition = decide({ kind: 'sent', reply: '250 OK', accepted: ['a@x.test'], rejected: ['b@x.test'], durationMs: 12.4 });
    expect(transition).toEqual({
      id: 7,
      from: [MailStatus.Processing],
      to: MailStatus.ProviderSent,
      at,
      event: {
        type: 'sent',
        actor: 'worker:w1',
        detail: { attempt: 1, reply: '250 OK', durationMs: 12, worker: 'w1', rejectedRecipients: ['b@x.test'] },
      },
      set: { providerReply: '250 OK', lease: null, providerSentAt: at },
      lease: { owner: 'w1', expiresAt: at + MINUTE },
    });
  });

  it('a 5xx → ProviderError at once, with its code; invalid → Error', () => {
    const rejected = decide({ kind: 'rejected', code: 550, reply: '550 no such user', durationMs: 1 });
    expect(rejected).toMatchObject({ to: MailStatus.ProviderError, event: { type: 'rejected', detail: { code: 550 } } });
    expect(rejected.set).not.toHaveProperty('nextAttemptAt');
    expect(decide({ kind: 'invalid', reply: 'no recipients', durationMs: 0 })).toMatchObject({
      to: MailStatus.Error,
      event: { type: 'invalid' },
    });
  });

  it('a 4xx with budget left → Queued at the backoff, the event named deferred-retry and saying when', () => {
    const transition = decide({ kind: 'deferred', code: 451, reply: '451 later', durationMs: 1 }, 2);
    expect(transition).toMatchObject({
      to: MailStatus.Queued,
      set: { nextAttemptAt: at + 2 * MINUTE },
      event: { type: 'deferred-retry', detail: { code: 451, nextAttemptAt: new Date(at + 2 * MINUTE).toISOString() } },
    });
  });

  it('budget spent: deferred → ProviderError (deferred-gave-up), unreachable → Error (unreachable-gave-up)', () => {
    expect(decide({ kind: 'deferred', code: 421, reply: '421 busy', durationMs: 1 }, 3)).toMatchObject({
      to: MailStatus.ProviderError,
      event: { type: 'deferred-gave-up' },
    });
    expect(decide({ kind: 'unreachable', reply: 'ECONNREFUSED', durationMs: 1 }, 3)).toMatchObject({
      to: MailStatus.Error,
      event: { type: 'unreachable-gave-up' },
    });
    expect(decide({ kind: 'unreachable', reply: 'ECONNREFUSED', durationMs: 1 }, 1)).toMatchObject({
      to: MailStatus.Queued,
      event: { type: 'unreachable-retry' },
    });
  });
});

describe('decideAttempt: per-recipient outcomes', () => {
  const all = (states: Record<string, RecipientState['outcome']>): RecipientState[] =>
    Object.entries(states).map(([address, outcome]) => ({ address, outcome }));
  const attempt = (outcome: DeliveryOutcome, states: Record<string, RecipientState['outcome']>, attempts = 1) => {
    const recipients = all(states);
    const targets = recipients
      .filter((r) => r.outcome === 'pending' || r.outcome === 'deferred' || r.outcome === null)
      .map((r) => r.address);
    return decideAttempt({ mail: mail(attempts), outcome, at, recipients: { all: recipients, targets } }, policy, 'w1');
  };
  const sent = (accepted: string[], refused: Array<[string, 'rejected' | 'deferred']>): DeliveryOutcome => ({
    kind: 'sent',
    reply: '250 OK',
    accepted,
    rejected: refused.map(([a]) => a),
    recipients: [
      ...accepted.map((address) => ({ address, outcome: 'accepted' as const, reply: '250 OK' })),
      ...refused.map(([address, outcome]) => ({ address, outcome, reply: outcome === 'deferred' ? '451 later' : '550 no' })),
    ],
    durationMs: 1,
  });

  it('accepted + rejected + deferred → Queued (recipients-deferred), each recipient written, the rejected counted', () => {
    const decision = attempt(
      sent(
        ['a@x.test'],
        [
          ['b@x.test', 'rejected'],
          ['c@x.test', 'deferred'],
        ],
      ),
      {
        'a@x.test': 'pending',
        'b@x.test': 'pending',
        'c@x.test': 'pending',
      },
    );
    expect(decision.transition).toMatchObject({
      to: MailStatus.Queued,
      set: { nextAttemptAt: at + MINUTE, rejectedRecipients: 1 },
      event: { type: 'recipients-deferred', detail: { pendingRecipients: ['c@x.test'] } },
    });
    expect(decision.transition.set).not.toHaveProperty('providerSentAt');
    expect(decision.recipients).toEqual([
      { mailId: 7, address: 'a@x.test', outcome: 'accepted', reply: '250 OK' },
      { mailId: 7, address: 'b@x.test', outcome: 'rejected', reply: '550 no' },
      { mailId: 7, address: 'c@x.test', outcome: 'deferred', reply: '451 later' },
    ]);
  });

  it('the last deferred recipient accepted on a later attempt → ProviderSent; earlier outcomes are kept, not rewritten', () => {
    const decision = attempt(sent(['c@x.test'], []), { 'a@x.test': 'accepted', 'b@x.test': 'rejected', 'c@x.test': 'deferred' }, 2);
    expect(decision.transition).toMatchObject({ to: MailStatus.ProviderSent, set: { providerSentAt: at, rejectedRecipients: 1 } });
    expect(decision.recipients.map((r) => r.address)).toEqual(['c@x.test']);
  });

  it('the last deferred recipient refused for good, nobody ever accepted → ProviderError (rejected)', () => {
    const refusal: DeliveryOutcome = {
      kind: 'rejected',
      code: 550,
      reply: '550 no',
      recipients: [{ address: 'c@x.test', outcome: 'rejected', reply: '550 no' }],
      durationMs: 1,
    };
    const decision = attempt(refusal, { 'b@x.test': 'rejected', 'c@x.test': 'deferred' }, 2);
    expect(decision.transition).toMatchObject({
      to: MailStatus.ProviderError,
      event: { type: 'rejected' },
      set: { rejectedRecipients: 2 },
    });
  });

  it('budget spent with recipients deferred: they turn rejected ("Gave up after …"); ProviderSent if one was accepted, else ProviderError', () => {
    const withAccepted = attempt(sent(['a@x.test'], [['c@x.test', 'deferred']]), { 'a@x.test': 'pending', 'c@x.test': 'pending' }, 3);
    expect(withAccepted.transition).toMatchObject({
      to: MailStatus.ProviderSent,
      event: { type: 'sent', detail: { gaveUpRecipients: ['c@x.test'] } },
      set: { rejectedRecipients: 1, providerSentAt: at },
    });
    expect(withAccepted.recipients.find((r) => r.address === 'c@x.test')).toEqual({
      mailId: 7,
      address: 'c@x.test',
      outcome: 'rejected',
      reply: 'Gave up after 3 attempts: 451 later',
    });
    const deferred: DeliveryOutcome = { kind: 'deferred', code: 451, reply: '451 later', durationMs: 1 };
    expect(attempt(deferred, { 'c@x.test': 'deferred' }, 3).transition).toMatchObject({
      to: MailStatus.ProviderError,
      event: { type: 'deferred-gave-up' },
    });
  });

  it('unreachable: recipients untouched while budget is left; at the end Error, or ProviderSent when one was accepted before', () => {
    const down: DeliveryOutcome = { kind: 'unreachable', reply: 'ECONNREFUSED', durationMs: 1 };
    const retry = attempt(down, { 'a@x.test': 'accepted', 'c@x.test': 'deferred' }, 2);
    expect(retry.transition).toMatchObject({ to: MailStatus.Queued, event: { type: 'unreachable-retry' } });
    expect(retry.recipients).toEqual([]);
    expect(attempt(down, { 'c@x.test': 'deferred' }, 3).transition).toMatchObject({
      to: MailStatus.Error,
      event: { type: 'unreachable-gave-up' },
    });
    expect(attempt(down, { 'a@x.test': 'accepted', 'c@x.test': 'deferred' }, 3).transition).toMatchObject({
      to: MailStatus.ProviderSent,
      set: { rejectedRecipients: 1 },
    });
  });
});
