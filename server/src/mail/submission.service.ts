/**
 * Accepting mail (PRODUCT.md §2): a JSON submission is composed into its RFC 5322 bytes here, an SMTP one
 * is kept as received; both are stored Queued in one transaction with their recipients, their first event
 * and the counter move, and the worker is woken. The Message-ID is fixed now, so a resend after a crash
 * carries the same one. An idempotency key seen before for the same API key returns the first mail.
 */
import { simpleParser, type AddressObject } from 'mailparser';
import { MailStatus, type Mail, type SubmitMailRequest } from '@outbox/contract';
import type { ApiKeyPrincipal } from '../auth/auth.service.js';
import type { Clock } from '../clock.js';
import { AppError, badRequest } from '../errors.js';
import type { Store } from '../store/connection.js';
import { createSpaceReserve, INTAKE_RESERVE_BYTES } from '../store/space-reserve.js';
import { buildMessage, checkMessageInput } from './message-builder.js';
import * as repo from './mail.repository.js';
import { toMail, type MailService } from './mail.service.js';

export interface RawSubmission {
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
  messageId: string;
}

interface PreparedMail {
  mail: repo.NewMail;
  idempotencyKey: string | null;
}

const searchTextOf = (fromName: string, fromMail: string, recipients: repo.NewRecipient[], subject: string) =>
  [fromName, fromMail, ...recipients.filter((r) => r.kind !== 'envelope').flatMap((r) => [r.name, r.address]), subject]
    .join(' ')
    .toLowerCase();

/** Values that become header text: a CR or LF would end the header line (injection); NUL no MTA takes. */
function singleLineProblems(field: string, value: string | undefined): string[] {
  if (value === undefined) return [];
  if (/[\r\n]/.test(value)) return [`${field} must not contain CR or LF`];
  if (value.includes('\0')) return [`${field} must not contain NUL`];
  return [];
}

/**
 * What a schema cannot say about a JSON submission: header-safe names and subject, valid addresses, usable
 * custom headers. One sentence per problem, naming the field relative to the mail (`to[0].recipientMail`),
 * so the HTTP layer can say where in the body it is. Empty when the mail can be built.
 */
export function submissionProblems(input: SubmitMailRequest): string[] {
  return [
    ...singleLineProblems('fromName', input.fromName),
    ...singleLineProblems('subject', input.subject),
    ...(['to', 'cc', 'bcc'] as const).flatMap((kind) =>
      (input[kind] ?? []).flatMap((r, i) => singleLineProblems(`${kind}[${i}].recipientName`, r.recipientName)),
    ),
    ...checkMessageInput(input),
  ];
}

export function createSubmissionService({ store, clock, mails }: { store: Store; clock: Clock; mails: MailService }) {
  const { db } = store;

  function newRow(
    principal: ApiKeyPrincipal,
    fields: { messageId: string; fromName: string; fromMail: string; subject: string; searchText: string; idempotencyKey: string | null },
    now: number,
  ): repo.NewMail['row'] {
    return {
      message_id: fields.messageId,
      from_name: fields.fromName,
      from_mail: fields.fromMail,
      subject: fields.subject,
      status: MailStatus.Queued,
      search_text: fields.searchText,
      received_at: now,
      last_update_at: now,
      next_attempt_at: now,
      lease_owner: null,
      lease_expires_at: null,
      provider_reply: null,
      api_key_id: principal.id,
      idempotency_key: fields.idempotencyKey,
    };
  }

  async function prepareJson(
    principal: ApiKeyPrincipal,
    input: SubmitMailRequest,
    index: number | undefined,
    now: number,
  ): Promise<PreparedMail> {
    let built;
    try {
      built = await buildMessage({ ...input, date: new Date(now) });
    } catch (error) {
      if (index !== undefined && error instanceof Error) error.message = `mail [${index}]: ${error.message}`;
      throw error;
    }
    const recipients: repo.NewRecipient[] = [
      ...(['to', 'cc', 'bcc'] as const).flatMap((kind) =>
        (input[kind] ?? []).map((r) => ({ kind, name: r.recipientName ?? '', address: r.recipientMail })),
      ),
      ...built.envelope.to.map((address) => ({ kind: 'envelope', name: '', address })),
    ];
    const fromName = input.fromName ?? '';
    return {
      idempotencyKey: input.idempotencyKey ?? null,
      mail: {
        row: newRow(
          principal,
          {
            messageId: built.messageId,
            fromName,
            fromMail: input.fromMail,
            subject: input.subject,
            searchText: searchTextOf(fromName, input.fromMail, recipients, input.subject),
            idempotencyKey: input.idempotencyKey ?? null,
          },
          now,
        ),
        recipients,
        content: {
          raw: built.raw,
          textBody: input.text ?? null,
          htmlBody: input.html ?? null,
          headersJson: input.headers ? JSON.stringify(input.headers) : null,
          envelopeFrom: built.envelope.from,
          sizeBytes: built.raw.length,
        },
      },
    };
  }

  async function prepareRaw(principal: ApiKeyPrincipal, submission: RawSubmission, now: number): Promise<PreparedMail> {
    const parsed = await simpleParser(submission.raw, { skipImageLinks: true, skipTextToHtml: true });
    const from = parsed.from?.value[0];
    const listOf = (field: AddressObject | AddressObject[] | undefined) =>
      (Array.isArray(field) ? field : field ? [field] : []).flatMap((group) => group.value).filter((a) => a.address);
    const recipients: repo.NewRecipient[] = [
      ...listOf(parsed.to).map((a) => ({ kind: 'to', name: a.name ?? '', address: a.address! })),
      ...listOf(parsed.cc).map((a) => ({ kind: 'cc', name: a.name ?? '', address: a.address! })),
      // The envelope decides who receives it, whatever the headers say (Bcc, lists).
      ...submission.envelopeTo.map((address) => ({ kind: 'envelope', name: '', address })),
    ];
    if (!recipients.some((r) => r.kind === 'to')) {
      // No To header: show the envelope recipients so the console's To column is never empty.
      recipients.push(...submission.envelopeTo.map((address) => ({ kind: 'to', name: '', address })));
    }
    const fromName = from?.name ?? '';
    const fromMail = from?.address ?? submission.envelopeFrom;
    const subject = parsed.subject ?? '';
    return {
      idempotencyKey: null,
      mail: {
        row: newRow(
          principal,
          {
            messageId: submission.messageId,
            fromName,
            fromMail,
            subject,
            searchText: searchTextOf(fromName, fromMail, recipients, subject),
            idempotencyKey: null,
          },
          now,
        ),
        recipients,
        content: {
          raw: submission.raw,
          textBody: parsed.text ?? null,
          htmlBody: typeof parsed.html === 'string' ? parsed.html : null,
          headersJson: null,
          envelopeFrom: submission.envelopeFrom,
          sizeBytes: submission.raw.length,
        },
      },
    };
  }

  interface Written {
    ids: number[];
    created: number[];
    /** The prepared mail each new id was made from: the answer is built from it, not read back. */
    createdFrom: Map<number, PreparedMail>;
  }

  interface Submission {
    principal: ApiKeyPrincipal;
    prepared: PreparedMail[];
    now: number;
    actor: string;
  }

  /**
   * One transaction, one durable commit, and one insert per table for every submission in the group.
   * Idempotency: a key already stored for that API key answers with the stored mail; the same key twice in
   * the group (one batch or two requests) is one mail, the first.
   */
  async function commitGroup(group: Submission[]): Promise<Written[]> {
    const results = await db.transaction().execute(async (trx) => {
      const keyOf = (principal: ApiKeyPrincipal, key: string) => `${principal.id}\u0000${key}`;
      const stored = new Map<string, number>();
      for (const { principal, prepared } of group) {
        const keys = prepared.map((p) => p.idempotencyKey).filter((k): k is string => k !== null);
        if (keys.length === 0) continue;
        const rows = await trx
          .selectFrom('mails')
          .select(['id', 'idempotency_key'])
          .where('api_key_id', '=', principal.id)
          .where('idempotency_key', 'in', keys)
          .execute();
        for (const row of rows) stored.set(keyOf(principal, row.idempotency_key!), row.id);
      }
      // Which prepared mails become new rows, and which stand for another (stored, or first in the group).
      const fresh: Array<{ prepared: PreparedMail; actor: string; now: number }> = [];
      const firstWithKey = new Map<string, PreparedMail>();
      const standsFor = new Map<PreparedMail, PreparedMail | number>();
      for (const { principal, prepared, actor, now } of group) {
        for (const p of prepared) {
          if (p.idempotencyKey !== null) {
            const key = keyOf(principal, p.idempotencyKey);
            const earlier = stored.get(key) ?? firstWithKey.get(key);
            if (earlier !== undefined) {
              standsFor.set(p, earlier);
              continue;
            }
            firstWithKey.set(key, p);
          }
          fresh.push({ prepared: p, actor, now });
        }
      }
      const freshIds = await repo.insertMails(
        trx,
        fresh.map((f) => f.prepared.mail),
      );
      const idOf = new Map<PreparedMail, number>(fresh.map((f, i) => [f.prepared, freshIds[i]!]));
      if (freshIds.length > 0) {
        await repo.insertEvents(
          trx,
          fresh.map((f, i) => ({
            mailId: freshIds[i]!,
            at: f.now,
            actor: f.actor,
            type: 'accepted',
            fromStatus: null,
            toStatus: MailStatus.Queued,
          })),
        );
        await repo.adjustStatusCounts(trx, new Map([[MailStatus.Queued, freshIds.length]]));
      }
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
        return { ids, created: [...createdFrom.keys()], createdFrom };
      });
    });
    const created = results.flatMap((r) => r.created);
    if (created.length > 0) mails.notify({ type: 'created', ids: created });
    return results;
  }

  /**
   * Group commit: a submission that arrives while a commit is running waits for the next one, which takes
   * every submission that arrived meanwhile. One mail per request then costs a share of a durable commit
   * instead of a whole one (fsync dominates intake), and an idle server still commits at once.
   */
  const waiting: Array<{ submission: Submission; resolve: (written: Written) => void; reject: (error: unknown) => void }> = [];
  let committing = false;
  let lastCommitEnd = -Infinity;
  const MAX_GROUP_MAILS = 2000;

  async function drain(): Promise<void> {
    committing = true;
    while (waiting.length > 0) {
      // Let submissions being parsed and built right now join this commit. SQLite commits synchronously, so
      // without a turn of the event loop they would never get the chance; when commits follow each other
      // (a busy server), a millisecond more gathers the requests still on their way.
      await new Promise((resolve) => setImmediate(resolve));
      if (waiting.length < 8 && performance.now() - lastCommitEnd < 10) await new Promise((resolve) => setTimeout(resolve, 1));
      let mailsInGroup = 0;
      let take = 0;
      while (take < waiting.length && (take === 0 || mailsInGroup + waiting[take]!.submission.prepared.length <= MAX_GROUP_MAILS)) {
        mailsInGroup += waiting[take]!.submission.prepared.length;
        take += 1;
      }
      const group = waiting.splice(0, take);
      try {
        const written = await commitGroup(group.map((g) => g.submission));
        lastCommitEnd = performance.now();
        group.forEach((g, i) => g.resolve(written[i]!));
      } catch (error) {
        if (group.length === 1) {
          group[0]!.reject(error);
          continue;
        }
        // One submission spoiled the group (e.g. an idempotency race): commit each alone, so only it fails.
        for (const g of group) {
          try {
            g.resolve((await commitGroup([g.submission]))[0]!);
          } catch (single) {
            g.reject(single);
          }
        }
      }
    }
    committing = false;
  }

  function enqueue(submission: Submission): Promise<Written> {
    return new Promise<Written>((resolve, reject) => {
      waiting.push({ submission, resolve, reject });
      if (!committing) void drain();
    });
  }

  /** Stores prepared mails; those whose idempotency key was seen before come back as the first mail. */
  async function persistMails(principal: ApiKeyPrincipal, prepared: PreparedMail[], now: number, actor: string): Promise<Mail[]> {
    const { ids, createdFrom } = await enqueue({ principal, prepared, now, actor });
    // New mails are answered from what was just written; only mails found by idempotency key are read.
    const earlier = [...new Set(ids.filter((id) => !createdFrom.has(id)))];
    const byId = new Map<number, Mail>();
    if (earlier.length > 0) {
      const rows = await db.selectFrom('mails').selectAll().where('id', 'in', earlier).execute();
      const recipients = await repo.listRecipients(db, earlier);
      for (const row of rows) byId.set(row.id, toMail(row, recipients.get(row.id)));
    }
    return ids.map((id) => {
      const known = byId.get(id);
      if (known) return known;
      const { row, recipients } = createdFrom.get(id)!.mail;
      return {
        id,
        fromName: row.from_name,
        fromMail: row.from_mail,
        to: recipients.filter((r) => r.kind === 'to').map((r) => ({ recipientName: r.name, recipientMail: r.address })),
        subject: row.subject,
        status: row.status,
        providerSentDate: null,
        receivedDate: new Date(row.received_at).toISOString(),
        lastUpdate: new Date(row.last_update_at).toISOString(),
      };
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
      const prepared = await Promise.all(inputs.map((input, i) => prepareJson(principal, input, isBatch ? i : undefined, now)));
      try {
        return await persistMails(principal, prepared, now, `api-key:${principal.name}`);
      } catch (error) {
        // Two submissions raced with the same idempotency key: the unique index let one in; answer with it.
        if (prepared.some((p) => p.idempotencyKey !== null) && /unique|duplicate/i.test(String(error))) {
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
