/**
 * What comes back after the relay's 250 (docs/bounces.md, PRODUCT.md §8): each report the bounce listener takes is
 * parsed (report-parser.ts), matched to its mail (the return path first, then the returned Message-ID), and kept,
 * matched or not. A hard bounce marks its recipient `bounced` and suppresses the address; when no recipient is
 * left accepted the mail goes ProviderSent → ProviderError. A delayed report only adds an event. A complaint
 * marks its recipient `complained` and suppresses the address. Reports share commits (group-commit.ts), so a
 * burst of bounces costs a share of an fsync each, not a whole one.
 */
import { MailStatus, type MailStatusCode, type BounceReport, type BounceSummary, type BouncesResponse } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import { appendApplicationEvents, newEventId } from '../events/application-events.repository.js';
import { createGroupCommit } from '../store/group-commit.js';
import { applyTransitions, nextMailEventSeq, type Transition } from '../mail/transition.repository.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import { suppressionCheckFor } from '../suppression/suppression-check.js';
import { upsertSuppressions, type NewSuppression } from '../suppression/suppression.repository.js';
import * as repo from './bounce.repository.js';
import { parseReport, type ParsedReport } from './report-parser.js';
import { createReturnPathCodec, newReturnPathSecret, type ReturnPathCodec } from './return-path.js';

export interface IncomingReport {
  /** MAIL FROM of the report; usually empty (the null sender). */
  envelopeFrom: string;
  /** RCPT TO addresses; the listener only accepts valid return paths. */
  envelopeTo: string[];
  raw: Buffer;
}

export interface ReceivedReport {
  reportId: number;
  kind: ParsedReport['kind'];
  mailId: number | null;
  matchedBy: 'return-path' | 'message-id' | null;
}

export interface BounceServiceOptions {
  store: Store;
  clock: Clock;
  /** BOUNCE_DOMAIN; undefined: no return path is used and no report can be matched by one. */
  bounceDomain?: string | undefined;
  /** Told about mails a report changed (live updates). */
  onChange?: (mailIds: number[]) => void;
}

/** Reports per shared commit. */
const MAX_GROUP = 50;

type Applied = BounceSummary['applied'][number];

export function createBounceService(options: BounceServiceOptions) {
  const { store, clock } = options;
  let codec: Promise<ReturnPathCodec> | undefined;

  /** The return-path codec, its secret created in the store on first use; undefined without BOUNCE_DOMAIN. */
  function returnPaths(): Promise<ReturnPathCodec> | undefined {
    const domain = options.bounceDomain;
    if (domain === undefined) return undefined;
    codec ??= repo.ensureServerSecret(store.db, 'return-path', newReturnPathSecret(), clock.now()).then(
      (secret) => createReturnPathCodec(secret, domain),
      (error: unknown) => {
        codec = undefined; // a store that was away is asked again next time
        throw error;
      },
    );
    return codec;
  }

  const commits = createGroupCommit<
    { incoming: IncomingReport; parsed: ParsedReport; returnPathMailId: number | undefined },
    ReceivedReport
  >({
    commit: (items) =>
      store.db.transaction().execute(async (trx) => {
        const moves = groupMoves(trx);
        const results: ReceivedReport[] = [];
        for (const item of items)
          results.push(await applyReport(trx, moves, item.incoming, item.parsed, item.returnPathMailId, clock.now()));
        await moves.flush();
        return results;
      }),
    // As submissions do (submission/submission.service.ts): SQLite commits synchronously, so reports being parsed join
    // only after a turn of the event loop, and while commits follow each other a couple of milliseconds more
    // gather the ones still on their way. An idle listener commits at once. Measured: bench/bounces.ts.
    async gather({ queued, msSinceLastCommit }) {
      await new Promise((resolve) => setImmediate(resolve));
      if (queued < 16 && msSinceLastCommit < 20) await new Promise((resolve) => setTimeout(resolve, 2));
    },
    maxGroupWeight: MAX_GROUP,
    splitOnFailure: true,
  });

  /** Parses, matches, keeps and applies one report. Resolves once it is committed. */
  async function receiveReport(incoming: IncomingReport): Promise<ReceivedReport> {
    const parsed = await parseReport(incoming.raw);
    const paths = await returnPaths();
    let returnPathMailId: number | undefined;
    for (const address of incoming.envelopeTo) {
      returnPathMailId = paths?.mailIdOf(address);
      if (returnPathMailId !== undefined) break;
    }
    const result = await commits.submit({ incoming, parsed, returnPathMailId });
    if (result.mailId !== null) options.onChange?.([result.mailId]);
    return result;
  }

  /**
   * The group's status moves, applied together at the end of its transaction (one UPDATE, one INSERT of events,
   * one counter move for the whole group, instead of per report). A second report about a mail already moved in
   * this group first applies what is pending, so that it reads the mail as the first report left it.
   */
  function groupMoves(trx: DbOrTrx) {
    let pending: Transition[] = [];
    const flush = async () => {
      if (pending.length === 0) return;
      const moves = pending;
      pending = [];
      await applyTransitions(trx, moves);
    };
    return {
      add: (transition: Transition) => void pending.push(transition),
      async settle(mailId: number | undefined) {
        if (mailId !== undefined && pending.some((t) => t.id === mailId)) await flush();
      },
      flush,
    };
  }

  async function applyReport(
    trx: DbOrTrx,
    moves: ReturnType<typeof groupMoves>,
    incoming: IncomingReport,
    parsed: ParsedReport,
    returnPathMailId: number | undefined,
    at: number,
  ): Promise<ReceivedReport> {
    let matchedBy: ReceivedReport['matchedBy'] = null;
    await moves.settle(returnPathMailId);
    let mail = returnPathMailId === undefined ? undefined : await repo.findBouncedMail(trx, returnPathMailId);
    if (mail) matchedBy = 'return-path';
    else if (parsed.originalMessageId) {
      const byMessageId = await repo.findMailIdByMessageId(trx, parsed.originalMessageId);
      await moves.settle(byMessageId);
      mail = byMessageId === undefined ? undefined : await repo.findBouncedMail(trx, byMessageId);
      if (mail) matchedBy = 'message-id';
    }

    const applied: Applied[] = [];
    const marks: Array<{ address: string; outcome: string; reply: string }> = [];
    const suppressions: NewSuppression[] = [];
    const detailRecipients: Array<Record<string, unknown>> = [];
    if (mail) {
      const found = mail;
      const target = (address: string, alone: boolean) =>
        found.recipients.find((r) => r.address.toLowerCase() === address) ??
        (alone && found.recipients.length === 1 ? found.recipients[0] : undefined);
      if (parsed.kind === 'dsn') {
        for (const entry of parsed.recipients) {
          const recipient = target(entry.recipient, parsed.recipients.length === 1);
          const hard = entry.action === 'failed' && entry.status.startsWith('5');
          const delayed = entry.action === 'delayed' || (entry.action === 'failed' && entry.status.startsWith('4'));
          const outcome: Applied['outcome'] = hard ? (recipient ? 'bounced' : 'unknown_recipient') : delayed ? 'delayed' : 'soft';
          applied.push({ recipient: recipient?.address ?? entry.recipient, outcome });
          detailRecipients.push({
            recipient: recipient?.address ?? entry.recipient,
            action: entry.action,
            status: entry.status,
            diagnostic: entry.diagnostic,
          });
          if (outcome !== 'bounced' || !recipient) continue;
          const reply = entry.diagnostic ?? `Status ${entry.status} (no Diagnostic-Code)`;
          marks.push({ address: recipient.address, outcome: 'bounced', reply });
          suppressions.push({
            address: recipient.address,
            reason: 'hard_bounce',
            mailId: found.id,
            detail: reply,
            createdBy: 'bounce',
            at,
          });
        }
      } else if (parsed.kind === 'arf' && parsed.feedback) {
        const named = parsed.feedback.recipients.length > 0 ? parsed.feedback.recipients : [''];
        for (const address of named) {
          const recipient = target(address, named.length === 1);
          if (!recipient) {
            applied.push({ recipient: address, outcome: 'unknown_recipient' });
            continue;
          }
          const reply = `Complaint (Feedback-Type: ${parsed.feedback.type})`;
          applied.push({ recipient: recipient.address, outcome: 'complained' });
          detailRecipients.push({ recipient: recipient.address, feedbackType: parsed.feedback.type });
          marks.push({ address: recipient.address, outcome: 'complained', reply });
          suppressions.push({ address: recipient.address, reason: 'complaint', mailId: found.id, detail: reply, createdBy: 'bounce', at });
        }
      }
    }

    const summary: BounceSummary = {
      subject: parsed.subject,
      recipients: parsed.recipients,
      feedback: parsed.feedback,
      originalMessageId: parsed.originalMessageId,
      problem: parsed.problem,
      applied,
    };
    const reportId = await repo.insertBounceReport(trx, {
      receivedAt: at,
      envelopeFrom: incoming.envelopeFrom,
      envelopeTo: incoming.envelopeTo[0] ?? '',
      kind: parsed.kind,
      mailId: mail?.id ?? null,
      matchedBy,
      summary: JSON.stringify(summary),
      raw: incoming.raw,
    });
    const result: ReceivedReport = { reportId, kind: parsed.kind, mailId: mail?.id ?? null, matchedBy };
    if (!mail) return result;

    const outcomes = new Map(mail.recipients.map((r) => [r.address, r.outcome]));
    for (const mark of marks) outcomes.set(mark.address, mark.outcome);
    const bounced = applied.some((a) => a.outcome === 'bounced');
    const complained = applied.some((a) => a.outcome === 'complained');
    const delayed = applied.some((a) => a.outcome === 'delayed');
    const eventType = bounced ? 'bounced' : complained ? 'complained' : delayed ? 'bounce-delayed' : undefined;
    if (eventType === undefined) return result;

    await repo.markRecipients(trx, mail.id, marks, at);
    await upsertSuppressions(trx, suppressions);
    // The next submission in this process looks at the list (it may have been known empty).
    if (suppressions.length > 0) suppressionCheckFor(store).added();
    // A complained recipient was delivered; null is an outcome recorded before migration 005 on a sent mail.
    const stillDelivered = [...outcomes.values()].filter((o) => o === 'accepted' || o === 'complained' || o === null).length;
    // Bounced recipients count with the refused ones: the list's mixed-outcome marker (docs/bounces.md).
    const refused = [...outcomes.values()].filter((o) => o === 'rejected' || o === 'bounced').length;
    const turnsFailed = bounced && mail.status === MailStatus.ProviderSent && stillDelivered === 0;
    const firstBounce = marks.find((m) => m.outcome === 'bounced');
    const transition: Transition = {
      id: mail.id,
      from: [mail.status as MailStatusCode],
      to: turnsFailed ? MailStatus.ProviderError : (mail.status as MailStatusCode),
      at,
      event: { type: eventType, actor: 'bounce', detail: { reportId, matchedBy, recipients: detailRecipients } },
      ...(bounced
        ? { set: { rejectedRecipients: refused, ...(turnsFailed && firstBounce ? { providerReply: firstBounce.reply } : {}) } }
        : {}),
    };
    if (bounced || complained) {
      // The applications' event (PRODUCT.md §8), in this transaction. Once applyTransitions writes application
      // events itself (the app-events branch), this is the one place to reconcile so it is not written twice.
      const mailSeq = await nextMailEventSeq(trx, mail.id);
      await appendApplicationEvents(trx, [
        {
          id: newEventId(),
          type: bounced ? 'mail.bounced' : 'mail.complained',
          mail_id: mail.id,
          mail_seq: mailSeq,
          api_key_id: mail.apiKeyId,
          created_at: at,
          payload: JSON.stringify({
            mailId: mail.id,
            status: transition.to,
            reportId,
            recipients: applied.filter((a) => a.outcome === 'bounced' || a.outcome === 'complained'),
            details: detailRecipients,
          }),
        },
      ]);
    }
    moves.add(transition);
    return result;
  }

  function toReport(row: repo.BounceReportSummaryRow): BounceReport {
    return {
      id: row.id,
      receivedAt: new Date(Number(row.received_at)).toISOString(),
      envelopeFrom: row.envelope_from,
      envelopeTo: row.envelope_to,
      kind: row.kind as BounceReport['kind'],
      mailId: row.mail_id,
      matchedBy: row.matched_by as BounceReport['matchedBy'],
      size: row.size,
      summary: JSON.parse(row.summary) as BounceSummary,
    };
  }

  function encodeCursor(row: repo.BounceReportSummaryRow): string {
    return `${row.received_at}.${row.id}`;
  }

  function decodeCursor(cursor: string): { receivedAt: number; id: number } {
    const match = /^(0|[1-9][0-9]{0,15})\.([1-9][0-9]{0,15})$/.exec(cursor);
    if (!match) throw badRequest('invalid_cursor', 'query.cursor is not a cursor this endpoint gave out (meta.nextCursor).');
    return { receivedAt: Number(match[1]), id: Number(match[2]) };
  }

  async function listReports(query: {
    matched?: 'true' | 'false' | undefined;
    limit?: number | undefined;
    cursor?: string | undefined;
  }): Promise<BouncesResponse> {
    const limit = query.limit ?? 100;
    const rows = await repo.listBounceReports(store.db, {
      matched: query.matched === undefined ? undefined : query.matched === 'true',
      limit: limit + 1,
      before: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    });
    const hasMore = rows.length > limit;
    const page = rows.slice(0, limit);
    return { data: page.map(toReport), meta: { nextCursor: hasMore ? encodeCursor(page.at(-1)!) : null } };
  }

  async function getRaw(id: number): Promise<Buffer> {
    const row = await repo.findBounceReport(store.db, id);
    if (!row) throw notFound('bounce_not_found', `No bounce report has id ${id}.`);
    return row.raw;
  }

  async function getReport(id: number): Promise<BounceReport> {
    const row = await repo.findBounceReport(store.db, id);
    if (!row) throw notFound('bounce_not_found', `No bounce report has id ${id}.`);
    const { raw, ...rest } = row;
    return toReport({ ...rest, size: raw.length });
  }

  async function listMailReports(mailId: number): Promise<BounceReport[]> {
    return (await repo.listMailBounceReports(store.db, mailId)).map(toReport);
  }

  return { returnPaths, receiveReport, listReports, getReport, getRaw, listMailReports, idle: () => commits.idle() };
}

export type BounceService = ReturnType<typeof createBounceService>;
