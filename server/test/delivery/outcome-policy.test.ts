/** The outcome policy alone: what each attempt result means for the mail, with no store and no relay. */
import { MailStatus } from '@outbox/contract';
import { describe, expect, it } from 'vitest';
import { decideOutcome, type AttemptedMail } from '../../src/delivery/outcome-policy.js';
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
