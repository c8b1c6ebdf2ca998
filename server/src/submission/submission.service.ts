/**
 * Accepting mail (docs/api.md#submission-post-apiv1mail): validation (submission-validation.ts), preparation of the rows
 * (submission-preparation.ts), then one group-committed transaction (group-commit.ts) that stores the
 * mails Queued with their recipients, their `accepted` transition and the counter move, and the worker is
 * woken. An idempotency key seen before for the same API key returns the first mail (idempotency.ts).
 */
import { MailStatus, type Mail, type SubmitMailRequest } from '@outbox/contract';
import type { ApiKeyPrincipal } from '../auth/auth.service.js';
import type { Clock } from '../clock.js';
import { AppError, badRequest } from '../errors.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import { createSpaceReserve, INTAKE_RESERVE_BYTES } from '../store/space-reserve.js';
import { createGroupCommit } from '../store/group-commit.js';
import { findMailIdsByIdempotencyKey, isIdempotencyKeyConflict } from './idempotency.repository.js';
import { keyOf, planIdempotency } from './idempotency.js';
import { acceptedCreation, suppressedCreation } from '../mail/lifecycle.js';
import { toMail } from '../mail/mail-mapping.js';
import * as repo from '../mail/mail.repository.js';
import type { MailService } from '../mail/mail.service.js';
import { prepareJson, prepareRaw, type PreparedMail, type RawSubmission } from './submission-preparation.js';
import { submissionProblems } from './submission-validation.js';
import { readSendAt } from './scheduled-send.js';
import { insertMails } from '../mail/write/create.js';
import { suppressionCheckFor } from '../suppression/suppression-check.js';
import { suppressedAmong } from '../suppression/suppression.repository.js';

export type { RawSubmission } from './submission-preparation.js';
export { submissionProblems } from './submission-validation.js';

interface Submission {
  principal: ApiKeyPrincipal;
  prepared: PreparedMail[];
  now: number;
  actor: string;
}

interface Written {
  ids: number[];
  /** The prepared mail each new id was made from: the answer is built from it, not read back. */
  createdFrom: Map<number, PreparedMail>;
}

/** A group takes submissions up to this many mails (a 500-mail batch still commits with others). */
const MAX_GROUP_MAILS = 2000;

export function createSubmissionService({ store, clock, mails }: { store: Store; clock: Clock; mails: MailService }) {
  const { db } = store;
  const suppressionCheck = suppressionCheckFor(store);
  /** The envelope addresses of a new mail found on the suppression list, for its answer. */
  const suppressedOf = new WeakMap<PreparedMail, { addresses: string[]; everyone: boolean }>();

  /**
   * Which envelope addresses of these mails are suppressed, with why: one indexed query for the whole group,
   * none while the list is known to be empty (suppression-check.ts).
   */
  async function findSuppressed(trx: DbOrTrx, mails: PreparedMail[], now: number): Promise<Map<string, string>> {
    if (mails.length === 0 || !(await suppressionCheck.mayHaveAny(trx))) return new Map();
    const addresses = mails.flatMap((p) => p.mail.recipients.filter((r) => r.kind === 'envelope').map((r) => r.address));
    const rows = await suppressedAmong(trx, addresses, now);
    return new Map([...rows].map(([address, row]) => [address, `Not sent: on the suppression list (${row.reason})`]));
  }

  /** One transaction, one durable commit, and one insert per table for every submission in the group. */
  async function commitGroup(group: Submission[]): Promise<Written[]> {
    const results = await db.transaction().execute(async (trx) => {
      const stored = new Map<string, number>();
      for (const { principal, prepared } of group) {
        const keys = prepared.map((p) => p.idempotencyKey).filter((k): k is string => k !== null);
        for (const [key, id] of await findMailIdsByIdempotencyKey(trx, principal.id, keys)) stored.set(keyOf(principal.id, key), id);
      }
      const { fresh, standsFor } = planIdempotency(
        group.flatMap(({ principal, prepared, actor, now }) => prepared.map((p) => ({ prepared: p, apiKeyId: principal.id, actor, now }))),
        stored,
      );
      // The mails, their `accepted` events, their `mail.queued` application events and the counter move.
      const suppressed = await findSuppressed(
        trx,
        fresh.map((f) => f.prepared),
        group[0]!.now,
      );
      const freshIds = await insertMails(
        trx,
        fresh.map((f) => {
          const envelope = f.prepared.mail.recipients.filter((r) => r.kind === 'envelope').map((r) => r.address);
          const mine = new Map(
            envelope.flatMap((a) => (suppressed.has(a.toLowerCase()) ? [[a.toLowerCase(), suppressed.get(a.toLowerCase())!]] : [])),
          );
          if (mine.size === 0) return { ...f.prepared.mail, created: acceptedCreation(f.now, f.actor) };
          const addresses = envelope.filter((a) => mine.has(a.toLowerCase()));
          const everyone = envelope.every((a) => mine.has(a.toLowerCase()));
          suppressedOf.set(f.prepared, { addresses, everyone });
          return {
            ...f.prepared.mail,
            created: everyone ? suppressedCreation(f.now, f.actor, addresses) : acceptedCreation(f.now, f.actor),
            suppressed: mine,
          };
        }),
      );
      const idOf = new Map<PreparedMail, number>(fresh.map((f, i) => [f.prepared, freshIds[i]!]));
      return group.map(({ prepared }): Written => {
        const createdFrom = new Map<number, PreparedMail>();
        const ids = prepared.map((p) => {
          const own = idOf.get(p);
          if (own !== undefined) {
            createdFrom.set(own, p);
            return own;
          }
          const other = standsFor.get(p)!;
          return typeof other === 'number' ? other : idOf.get(other)!;
        });
        return { ids, createdFrom };
      });
    });
    const created = results.flatMap((r) => [...r.createdFrom.keys()]);
    if (created.length > 0) mails.notify({ type: 'created', ids: created });
    return results;
  }

  const submissions = createGroupCommit<Submission, Written>({
    commit: commitGroup,
    maxGroupWeight: MAX_GROUP_MAILS,
    weightOf: (submission) => submission.prepared.length,
    // One submission spoiled the group (an idempotency race): commit each alone, so only it fails.
    splitOnFailure: true,
    // PostgreSQL: a group is gathered and sent while another executes (each has a connection of its own); a
    // batch's statement then no longer waits for the thread to build the next, nor the thread for it.
    maxConcurrentCommits: store.engine === 'postgres' ? 2 : 1,
    // Let submissions being parsed and built right now join this commit. SQLite commits synchronously, so
    // without a turn of the event loop they would never get the chance; when commits follow each other (a
    // busy server), a millisecond more gathers the requests still on their way. An idle server commits at once.
    async gather({ queued, msSinceLastCommit }) {
      await new Promise((resolve) => setImmediate(resolve));
      if (queued < 8 && msSinceLastCommit < 10) await new Promise((resolve) => setTimeout(resolve, 1));
    },
  });

  /** Stores prepared mails; those whose idempotency key was seen before come back as the first mail. */
  async function persistMails(principal: ApiKeyPrincipal, prepared: PreparedMail[], now: number, actor: string): Promise<Mail[]> {
    const { ids, createdFrom } = await submissions.submit({ principal, prepared, now, actor });
    // New mails are answered from what was just written; only mails found by idempotency key are read.
    const earlier = [...new Set(ids.filter((id) => !createdFrom.has(id)))];
    const byId = new Map<number, Mail>();
    if (earlier.length > 0) {
      const [rows, recipients] = await Promise.all([repo.findMailRows(db, earlier), repo.listRecipients(db, earlier)]);
      for (const row of rows) byId.set(row.id, toMail(row, recipients.get(row.id)));
    }
    return ids.map((id) => {
      const known = byId.get(id);
      if (known) return known;
      const prepared = createdFrom.get(id)!;
      const { row, recipients } = prepared.mail;
      const suppressed = suppressedOf.get(prepared);
      const mail = toMail(
        {
          ...row,
          id,
          status: suppressed?.everyone ? MailStatus.Error : MailStatus.Queued,
          recipient_count: repo.envelopeRecipientCount(recipients),
        },
        recipients.filter((r) => r.kind === 'to'),
      );
      return suppressed ? { ...mail, suppressedRecipients: suppressed.addresses } : mail;
    });
  }

  // The last of the disk is kept for delivery outcomes and operators (store/space-reserve.ts).
  const reserve = createSpaceReserve(store);
  async function ensureRoom(): Promise<void> {
    if (!(await reserve.hasRoomForIntake()))
      throw new AppError(
        507,
        'store_full',
        `The mail store is full: less than ${INTAKE_RESERVE_BYTES / 1_048_576} MiB is left, which is kept for recording deliveries. Nothing was changed; free disk space, then try again.`,
      );
  }

  return {
    /** A JSON submission or a batch of them; all or nothing. */
    async submitJson(principal: ApiKeyPrincipal, inputs: SubmitMailRequest[], isBatch: boolean): Promise<Mail[]> {
      // Every mail is checked before any is built, so a batch is refused whole and names its first bad mail.
      inputs.forEach((input, i) => {
        const problems = submissionProblems(input);
        if (problems.length > 0) throw badRequest('invalid_request', problems.map((p) => (isBatch ? `[${i}].${p}` : p)).join('; '));
      });
      await ensureRoom();
      const now = clock.now();
      const sendAts = inputs.map((input, i) => {
        const reading = readSendAt(input.sendAt, { now, field: isBatch ? `[${i}].sendAt` : 'sendAt' });
        if (!reading.ok) throw badRequest('invalid_request', reading.problem);
        return reading.at;
      });
      const prepared = inputs.map((input, i) => prepareJson(principal, input, isBatch ? i : undefined, now, sendAts[i]));
      try {
        return await persistMails(principal, prepared, now, `api-key:${principal.name}`);
      } catch (error) {
        // Two submissions raced with the same idempotency key: the unique index let one in; answer with it.
        if (prepared.some((p) => p.idempotencyKey !== null) && isIdempotencyKeyConflict(error, store.engine)) {
          return persistMails(principal, prepared, now, `api-key:${principal.name}`);
        }
        throw error;
      }
    },

    /** A message received over SMTP, kept byte for byte. */
    async submitRaw(principal: ApiKeyPrincipal, submission: RawSubmission): Promise<Mail> {
      await ensureRoom();
      const now = clock.now();
      const [mail] = await persistMails(principal, [await prepareRaw(principal, submission, now)], now, `smtp:${principal.name}`);
      return mail!;
    },
  };
}

export type SubmissionService = ReturnType<typeof createSubmissionService>;
