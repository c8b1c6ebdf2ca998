/**
 * Realistic demo mails over all six statuses (docs/operations.md#the-command-line, `demo --count N`): varied senders, 1–4
 * recipients, unicode names, dates spread over four weeks. Inserted in large batches, one transaction each,
 * through the same transitions as real mail (events and counters included); fast enough for a million rows.
 */
import crypto from 'node:crypto';
import { MailStatus, type MailEventType, type MailStatusCode, type SubmitMailRequest } from '@outbox/contract';
import { claimTransition } from '../delivery/lease-transitions.js';
import type { Store } from '../store/connection.js';
import { acceptedCreation, dequeueTransition } from '../mail/lifecycle.js';
import { DOMAINS, FIRST, LAST, SENDERS, SUBJECTS } from './demo-words.js';
import type * as repo from '../mail/mail.repository.js';
import { applyTransitions } from '../mail/write/apply.js';
import { insertMails } from '../mail/write/create.js';
import { type MailCreation, type Transition, type TransitionChanges } from '../mail/transition-types.js';

/** Share of each status among demo mails, in per-mille. */
const STATUS_WEIGHTS: Array<[MailStatusCode, number]> = [
  [MailStatus.Queued, 80],
  [MailStatus.Dequeued, 40],
  [MailStatus.Processing, 20],
  [MailStatus.ProviderSent, 760],
  [MailStatus.ProviderError, 60],
  [MailStatus.Error, 40],
];

/** A small deterministic PRNG (mulberry32): the same seed gives the same demo. */
function createRandom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (max: number) => Math.floor(next() * max);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  return { next, int, pick };
}

function pickStatus(roll: number): MailStatusCode {
  let acc = 0;
  for (const [status, weight] of STATUS_WEIGHTS) {
    acc += weight;
    if (roll < acc) return status;
  }
  return MailStatus.ProviderSent;
}

const ascii = (text: string) =>
  text
    .normalize('NFKD')
    .replace(/[^a-zA-Z]/g, '')
    .toLowerCase() || 'user';

/**
 * A demo mail as an application would submit it (`demo --send`): it goes through the real pipeline, so its
 * status is whatever delivery makes of it; recipients at reject.test and defer.test produce the failures.
 */
export function buildDemoSubmission(random: ReturnType<typeof createRandom>): SubmitMailRequest {
  const [fromName, fromMail] = random.pick(SENDERS);
  const recipientCount = 1 + Math.min(3, Math.floor(-Math.log(1 - random.next()) * 0.8));
  // One mail in ten goes to a single refusing domain, so both failure paths show up beside the deliveries.
  const failing = random.next() < 0.1 ? random.pick(DOMAINS.slice(6)) : undefined;
  const to = Array.from({ length: failing ? 1 : recipientCount }, () => {
    const first = random.pick(FIRST);
    const last = random.pick(LAST);
    const domain = failing ?? random.pick(DOMAINS.slice(0, 6));
    return { recipientName: `${first} ${last}`, recipientMail: `${ascii(first)}.${ascii(last)}${random.int(100)}@${domain}` };
  });
  const subject = random
    .pick(SUBJECTS)
    .replace('{n}', String(10000 + random.int(90000)))
    .replace('{name}', to[0]!.recipientName.split(' ')[0]!)
    .replace('{q}', String(1 + random.int(4)))
    .replace('{amount}', (random.int(50000) / 100).toFixed(2))
    .replace('{day}', `${1 + random.int(28)}/${1 + random.int(12)}`);
  return {
    fromName,
    fromMail,
    to,
    subject,
    text: `Hello ${to[0]!.recipientName},\n\nThis is a demo mail sent through Outbox.\n\n— ${fromName}`,
    html: `<p>Hello ${to[0]!.recipientName},</p><p>This is a demo mail sent through <b>Outbox</b>.</p><p>— ${fromName}</p>`,
  };
}

/** `count` demo submissions in batches, for `demo --send`. */
export function* demoSubmissionBatches(count: number, seed: number, batchSize = 500): Generator<SubmitMailRequest[]> {
  const random = createRandom(seed);
  for (let made = 0; made < count; made += batchSize) {
    yield Array.from({ length: Math.min(batchSize, count - made) }, () => buildDemoSubmission(random));
  }
}

/**
 * A demo mail as the pipeline would have left it: the row as accepted (Queued), and the transitions that
 * took it to its status, in steps (dequeued or claimed; the attempt's outcome). Going through the real
 * transitions keeps the events and counters exactly what the pipeline writes. No application events: a demo
 * mail is no application's, and a million of them would only flood the webhooks' outbox.
 */
export interface DemoMail extends repo.NewMail {
  created: MailCreation;
  steps: Array<(id: number) => Transition>;
  /** Processing: its steps end holding a lease. */
  leased: boolean;
}

/**
 * Processing mails in one demo fill at most: a mail is Processing only while a worker sends it, so a live store
 * holds no more than its workers' sends in flight (WORKER_CONCURRENCY, 50 by default), however many mails it
 * keeps. Beyond them, a mail drawn Processing is Queued. A million-mail demo with 2 % Processing held 20,000
 * week-long leases, a queue no running service has, and every status filter naming Queued or Processing paid
 * for reading them.
 */
const DEMO_MAX_PROCESSING = 50;

export function buildDemoMail(random: ReturnType<typeof createRandom>, now: number, spanMs: number, canLease = true): DemoMail {
  const [fromName, fromMail] = random.pick(SENDERS);
  const recipientCount = 1 + Math.min(3, Math.floor(-Math.log(1 - random.next()) * 0.8));
  const recipients: repo.NewRecipient[] = [];
  for (let i = 0; i < recipientCount; i++) {
    const first = random.pick(FIRST);
    const last = random.pick(LAST);
    // Mostly deliverable domains; a few at reject.test / defer.test so every outcome shows up.
    const domain = random.next() < 0.97 ? random.pick(DOMAINS.slice(0, 6)) : random.pick(DOMAINS.slice(6));
    recipients.push({ kind: 'to', name: `${first} ${last}`, address: `${ascii(first)}.${ascii(last)}${random.int(100)}@${domain}` });
  }
  const n = 10000 + random.int(90000);
  const subject = random
    .pick(SUBJECTS)
    .replace('{n}', String(n))
    .replace('{name}', recipients[0]!.name.split(' ')[0]!)
    .replace('{q}', String(1 + random.int(4)))
    .replace('{amount}', (random.int(50000) / 100).toFixed(2))
    .replace('{day}', `${1 + random.int(28)}/${1 + random.int(12)}`);
  const drawn = pickStatus(random.int(1000));
  const status = drawn === MailStatus.Processing && !canLease ? MailStatus.Queued : drawn;
  const receivedAt = now - Math.floor(random.next() * spanMs);
  const handledAt = Math.min(now, receivedAt + 200 + random.int(5000));
  let lastUpdateAt = receivedAt;
  let nextAttemptAt = receivedAt;
  let attempts = 0;
  const steps: DemoMail['steps'] = [];
  /** Claimed at `at`, then the attempt ended there with `to`. */
  const attempted = (to: MailStatusCode, type: MailEventType, reply: string, set: TransitionChanges = {}) => {
    steps.push((id) => claimTransition(id, handledAt, { owner: 'demo', expiresAt: handledAt + 60_000 }));
    steps.push((id) => ({
      id,
      from: [MailStatus.Processing],
      to,
      at: handledAt,
      event: { type, actor: 'worker:demo', detail: { reply } },
      set: { providerReply: reply, lease: null, ...set },
    }));
  };
  switch (status) {
    case MailStatus.Queued:
      // Waiting for a retry in the future, so the demo keeps showing Queued mails while a worker runs.
      nextAttemptAt = now + 3_600_000 + random.int(30 * 86_400_000);
      attempts = random.int(3);
      lastUpdateAt = attempts > 0 ? handledAt : receivedAt;
      break;
    case MailStatus.Dequeued:
      steps.push((id) => dequeueTransition(id, handledAt, 'operator:demo'));
      break;
    case MailStatus.Processing: {
      const claimedAt = now - random.int(30_000);
      steps.push((id) => claimTransition(id, claimedAt, { owner: 'demo', expiresAt: now + 7 * 86_400_000 }));
      break;
    }
    case MailStatus.ProviderSent:
      attempted(MailStatus.ProviderSent, 'sent', `250 2.0.0 OK queued as ${crypto.randomBytes(5).toString('hex')}`, {
        providerSentAt: handledAt,
      });
      break;
    case MailStatus.ProviderError:
      attempted(MailStatus.ProviderError, 'rejected', '550 5.1.1 Recipient address rejected: User unknown');
      break;
    default:
      // An unreachable relay, retried until the budget was spent.
      attempted(MailStatus.Error, 'unreachable-gave-up', 'connect ECONNREFUSED relay.example:587', { attempts: 8 });
  }
  return {
    leased: status === MailStatus.Processing,
    row: {
      message_id: `<${crypto.randomUUID()}@outbox.demo>`,
      from_name: fromName,
      from_mail: fromMail,
      subject,
      received_at: receivedAt,
      last_update_at: lastUpdateAt,
      provider_sent_at: 0,
      next_attempt_at: nextAttemptAt,
      attempts,
      provider_reply: null,
      api_key_id: null,
      idempotency_key: null,
    },
    recipients,
    created: acceptedCreation(receivedAt, 'demo'),
    steps,
  };
}

export interface DemoOptions {
  count: number;
  now: number;
  seed?: number;
  batchSize?: number;
  /** Dates spread back from `now` over this span (default four weeks, inside the default 30-day retention). */
  spanMs?: number;
  onProgress?: (inserted: number) => void;
}

export async function insertDemoMails(store: Store, options: DemoOptions): Promise<number> {
  const random = createRandom(options.seed ?? 42);
  const batchSize = options.batchSize ?? 5000;
  const spanMs = options.spanMs ?? 28 * 86_400_000;
  let inserted = 0;
  let leased = 0;
  while (inserted < options.count) {
    const size = Math.min(batchSize, options.count - inserted);
    const mails = Array.from({ length: size }, () => {
      const mail = buildDemoMail(random, options.now, spanMs, leased < DEMO_MAX_PROCESSING);
      if (mail.leased) leased++;
      return mail;
    });
    await store.db.transaction().execute(async (trx) => {
      const ids = await insertMails(trx, mails, { applicationEvents: false });
      // Step by step, each step one applyTransitions over the whole batch (a few statements per 500 mails).
      for (let step = 0; mails.some((mail) => mail.steps.length > step); step++) {
        await applyTransitions(
          trx,
          mails.flatMap((mail, i) => (mail.steps.length > step ? [mail.steps[step]!(ids[i]!)] : [])),
          { applicationEvents: false },
        );
      }
    });
    inserted += size;
    options.onProgress?.(inserted);
  }
  return inserted;
}
