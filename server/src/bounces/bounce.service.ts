/**
 * What comes back after the relay's 250 (docs/bounces.md, PRODUCT.md §8): each report the bounce listener takes is
 * parsed (report-parser.ts), matched to its mail (the return path first, then the returned Message-ID), and kept,
 * matched or not. A hard bounce marks its recipient `bounced` and suppresses the address; when no recipient is
 * left accepted the mail goes ProviderSent → ProviderError. A delayed report only adds an event. A complaint
 * marks its recipient `complained` and suppresses the address. Reports share commits (group-commit.ts), so a
 * burst of bounces costs a share of an fsync each, not a whole one.
 */
import {
  MAIL_DETAIL_BOUNCES,
  MailStatus,
  type MailStatusCode,
  type BounceReport,
  type BounceSummary,
  type BouncesResponse,
} from '@outbox/contract';
import type { Clock } from '../clock.js';
import { AppError, badRequest, notFound } from '../errors.js';
import { createGroupCommit, type GroupCommit } from '../store/group-commit.js';
import { createSpaceReserve, INTAKE_RESERVE_BYTES } from '../store/space-reserve.js';
import { applyTransitions } from '../mail/write/apply.js';
import { countRefused, isDelivered, isFinalAfterDelivery } from '../mail/recipient-outcomes.js';
import { moveStatusCounts } from '../mail/write/counters.js';
import { type StatusCountMoves, type Transition } from '../mail/transition.js';
import { createStatisticsMoves, type StatisticsMoves } from '../statistics/statistics-moves.js';
import { writeStatistics } from '../statistics/statistics.repository.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import { suppressionCheckFor } from '../suppression/suppression-check.js';
import { upsertSuppressions, type NewSuppression } from '../suppression/suppression.repository.js';
import * as repo from './bounce.repository.js';
import { parseReport, type ParsedReport } from './report-parser.js';
import { RAW_KEPT_BYTES } from './report-limits.js';
import { createReturnPathCodec, newReturnPathSecret, type ReturnPath, type ReturnPathCodec } from './return-path.js';

export interface IncomingReport {
  /** MAIL FROM of the report; usually empty (the null sender). */
  envelopeFrom: string;
  /** RCPT TO addresses; the listener only accepts valid return paths. */
  envelopeTo: string[];
  raw: Buffer;
}

export interface ReceivedReport {
  /** The kept report; null when the report changed nothing and its mail has its reports already (not kept again). */
  reportId: number | null;
  kind: ParsedReport['kind'];
  mailId: number | null;
  matchedBy: 'return-path' | 'message-id' | null;
}

export interface BounceServiceOptions {
  store: Store;
  clock: Clock;
  /** BOUNCE_DOMAIN; undefined: no return path is used and no report can be matched by one. */
  bounceDomain?: string | undefined;
  /** BOUNCE_UNMATCHED_KEEP: unmatched reports kept at most, the oldest deleted first; MAX_UNMATCHED_REPORTS by default. */
  maxUnmatchedReports?: number;
  /** Told about mails a report changed (live updates). */
  onChange?: (mailIds: number[]) => void;
}

/** Reports per shared commit. */
const MAX_GROUP = 50;
/** How long a group waits, at most, for reports still being parsed while commits follow each other. */
const GATHER_MS = 10;
/**
 * Reports kept per mail beyond those that change a recipient's outcome (docs/bounces.md#limits): past it a delayed
 * report neither is kept nor adds an event. A report that changes an outcome is always kept, and that happens at
 * most once per recipient, since bounced and complained are final.
 */
export const MAX_REPORTS_PER_MAIL = 20;
/** Unmatched reports kept at most by default (BOUNCE_UNMATCHED_KEEP); the oldest go first (docs/bounces.md#limits). */
export const MAX_UNMATCHED_REPORTS = 1_000;

type Applied = BounceSummary['applied'][number];

/** What a group's rounds move, written once after the last round. */
interface GroupMoves {
  counts: StatusCountMoves;
  statistics: StatisticsMoves;
}

/** A parsed report waiting for its group's commit. */
interface PendingReport {
  incoming: IncomingReport;
  parsed: ParsedReport;
  /** What its return path names (return-path.ts); undefined when it names nothing of ours. */
  returnPath: ReturnPath | undefined;
}

interface Match {
  mail: repo.BouncedMail | undefined;
  matchedBy: ReceivedReport['matchedBy'];
  /**
   * The one envelope address the report may affect: the recipient its return path names. Undefined when it may
   * affect none (a per-mail return path of a mail with several recipients, from before return paths named one).
   */
  recipient: string | undefined;
}

/** What a report does to its mail's recipients, worked out before anything is written. */
interface ReportEffect {
  summary: BounceSummary;
  applied: Applied[];
  marks: Array<{ address: string; outcome: 'bounced' | 'complained'; reply: string }>;
  suppressions: NewSuppression[];
  detailRecipients: Array<Record<string, unknown>>;
  bounced: boolean;
  complained: boolean;
  delayed: boolean;
  /** A feedback report's Feedback-Type. */
  feedbackType: string | undefined;
}

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

  /** Reports between arrival and their group's queue (being parsed): the gather waits for them. */
  let parsing = 0;
  const commits: GroupCommit<PendingReport, ReceivedReport> = createGroupCommit<PendingReport, ReceivedReport>({
    commit: (items) => store.db.transaction().execute((trx) => applyGroup(trx, items, clock.now())),
    // As submissions do (submission/submission.service.ts): SQLite commits synchronously, so reports being parsed join
    // only after a turn of the event loop. While commits follow each other, the group also waits (up to
    // GATHER_MS after its oldest report) for the reports this process is parsing right now: each session has at
    // most one report in flight, so without the wait a group holds only the few that happened to be parsed
    // (3.4 of 8 on average, measured), and every report pays a larger share of the commit. An idle listener
    // commits at once. Measured: bench/bounces.ts, docs/bounces.md.
    async gather({ queued, msSinceLastCommit, oldestWaitMs }) {
      await new Promise((resolve) => setImmediate(resolve));
      if (msSinceLastCommit >= 20) return;
      const started = performance.now() - oldestWaitMs;
      let waiting = queued;
      while (parsing > 0 && waiting < MAX_GROUP && performance.now() - started < GATHER_MS) {
        await new Promise((resolve) => setTimeout(resolve, 1));
        waiting = commits.queued;
      }
    },
    maxGroupWeight: MAX_GROUP,
    splitOnFailure: true,
  });

  // The last of the disk is kept for delivery outcomes and operators (store/space-reserve.ts): reports come from
  // strangers and must not eat it. The listener refuses with 452 at MAIL FROM while it is reached.
  const reserve = createSpaceReserve(store);
  async function ensureRoom(): Promise<void> {
    if (!(await reserve.hasRoomForIntake()))
      throw new AppError(
        507,
        'store_full',
        `The mail store is full: less than ${INTAKE_RESERVE_BYTES / 1_048_576} MiB is left, which is kept for recording deliveries.`,
      );
  }

  /** Parses, matches, keeps and applies one report. Resolves once it is committed. */
  async function receiveReport(incoming: IncomingReport): Promise<ReceivedReport> {
    await ensureRoom();
    parsing += 1;
    let parsed: ParsedReport;
    let paths: ReturnPathCodec | undefined;
    try {
      parsed = await parseReport(incoming.raw);
      paths = await returnPaths();
    } finally {
      parsing -= 1;
    }
    let returnPath: ReturnPath | undefined;
    for (const address of incoming.envelopeTo) {
      returnPath = paths?.parse(address);
      if (returnPath !== undefined) break;
    }
    const result = await commits.submit({ incoming, parsed, returnPath });
    // A report not kept changed nothing: no live update either (a flood of copies would otherwise be one).
    if (result.mailId !== null && result.reportId !== null) options.onChange?.([result.mailId]);
    return result;
  }

  /**
   * Applies a group's reports set-wise (issue 22's speed): one read of the mails and their recipients, one INSERT
   * of the reports, one UPDATE of the recipients, one upsert of the suppressions, one sequence move, one INSERT of
   * application events and one applyTransitions, whatever the group's size; per-report statements cost more than
   * the commit they share. The group is taken in rounds in which each mail appears once: a second report about a
   * mail waits for the next round, which reads the mail as the first one left it (both in this transaction).
   */
  async function applyGroup(trx: DbOrTrx, items: PendingReport[], at: number): Promise<ReceivedReport[]> {
    const results: ReceivedReport[] = [];
    // The status counters and the statistics move once for the whole group, last: a round after the first would
    // otherwise take counter rows while holding statistics rows, out of the order every writer keeps.
    const moves: GroupMoves = { counts: new Map(), statistics: createStatisticsMoves() };
    let rest = items;
    while (rest.length > 0) {
      const matches = await matchReports(trx, rest);
      const seen = new Set<number>();
      let take = 0;
      while (take < rest.length) {
        const mailId = matches[take]!.mail?.id;
        if (mailId !== undefined && seen.has(mailId)) break;
        if (mailId !== undefined) seen.add(mailId);
        take += 1;
      }
      results.push(...(await applyRound(trx, rest.slice(0, take), matches.slice(0, take), at, moves)));
      rest = rest.slice(take);
    }
    await moveStatusCounts(trx, moves.counts);
    await writeStatistics(trx, moves.statistics);
    return results;
  }

  /**
   * Each report's mail and recipient, by its return path alone: a return path names one recipient of one mail
   * (return-path.ts). A report whose mail is gone (purged, deleted) matches nothing and is kept unmatched; the
   * Message-ID it returns is not looked up, since anyone who saw a mail could name it. One query for the group.
   */
  async function matchReports(trx: DbOrTrx, items: PendingReport[]): Promise<Match[]> {
    const mails = await repo.findBouncedMails(
      trx,
      items.flatMap((item) => (item.returnPath === undefined ? [] : [item.returnPath.mailId])),
    );
    return items.map((item): Match => {
      const mail = item.returnPath === undefined ? undefined : mails.get(item.returnPath.mailId);
      if (!mail) return { mail: undefined, matchedBy: null, recipient: undefined };
      const distinct = [...new Set(mail.recipients.map((r) => r.address))];
      const named = item.returnPath!.recipient;
      // The earlier per-mail form names a recipient only where the mail had one (docs/bounces.md#return-paths).
      const recipient = named === undefined ? (distinct.length === 1 ? distinct[0] : undefined) : distinct[named];
      return { mail, matchedBy: 'return-path', recipient };
    });
  }

  /** One round: reports about distinct mails, each as matchReports found it. */
  async function applyRound(
    trx: DbOrTrx,
    items: PendingReport[],
    matches: Match[],
    at: number,
    moves: GroupMoves,
  ): Promise<ReceivedReport[]> {
    const effects = items.map((item, i) => effectOf(item.parsed, matches[i]!.mail, matches[i]!.recipient, at));
    // What is kept (docs/bounces.md#limits): a report that changes an outcome always; a delayed one while its mail
    // has fewer than MAX_REPORTS_PER_MAIL; one that changes nothing only as its mail's first; an unmatched one
    // always (the oldest unmatched are trimmed below). A report not kept has no effect either: a flood of copies
    // of one hard bounce writes one report, one mail event and one application event.
    // The mails' report counts are read only for reports that move no recipient (not the common hard bounce).
    const unsure = effects.flatMap((effect, i) => (matches[i]!.mail && effect.marks.length === 0 ? [matches[i]!.mail!.id] : []));
    const counts = await repo.countMailReports(trx, unsure);
    const keeps = effects.map((effect, i) => {
      const mail = matches[i]!.mail;
      if (!mail || effect.marks.length > 0) return true;
      const keptReports = counts.get(mail.id) ?? 0;
      if (effect.delayed) return keptReports < MAX_REPORTS_PER_MAIL;
      return keptReports === 0;
    });
    const kept = items.flatMap((item, i) => (keeps[i] ? [i] : []));
    const reportIds = await repo.insertBounceReports(
      trx,
      kept.map((i) => {
        const item = items[i]!;
        const raw = item.incoming.raw;
        // The parsed fields were read from the whole report; its bytes are kept only up to RAW_KEPT_BYTES.
        const summary = raw.length > RAW_KEPT_BYTES ? { ...effects[i]!.summary, rawSize: raw.length } : effects[i]!.summary;
        return {
          receivedAt: at,
          envelopeFrom: item.incoming.envelopeFrom,
          envelopeTo: item.incoming.envelopeTo[0] ?? '',
          kind: item.parsed.kind,
          mailId: matches[i]!.mail?.id ?? null,
          matchedBy: matches[i]!.matchedBy,
          summary: JSON.stringify(summary),
          raw: raw.length > RAW_KEPT_BYTES ? raw.subarray(0, RAW_KEPT_BYTES) : raw,
        };
      }),
    );
    const idOf = new Map(kept.map((i, n) => [i, reportIds[n]!]));
    const results = items.map((item, i): ReceivedReport => ({
      reportId: idOf.get(i) ?? null,
      kind: item.parsed.kind,
      mailId: matches[i]!.mail?.id ?? null,
      matchedBy: matches[i]!.matchedBy,
    }));
    if (kept.some((i) => !matches[i]!.mail)) await repo.trimUnmatchedReports(trx, options.maxUnmatchedReports ?? MAX_UNMATCHED_REPORTS);

    const changes = effects.flatMap((effect, i) => {
      const mail = matches[i]!.mail;
      const reportId = results[i]!.reportId;
      const transition = mail && reportId !== null ? transitionOf(mail, effect, reportId, results[i]!.matchedBy, at) : undefined;
      return mail && transition && reportId !== null ? [{ mail, effect, transition, reportId }] : [];
    });
    if (changes.length === 0) return results;

    await repo.markRecipients(
      trx,
      changes.flatMap(({ mail, effect }) => effect.marks.map((mark) => ({ mailId: mail.id, ...mark }))),
      at,
    );
    const suppressions = changes.flatMap(({ effect }) => effect.suppressions);
    await upsertSuppressions(trx, suppressions);
    // The next submission in this process looks at the list (it may have been known empty).
    if (suppressions.length > 0) suppressionCheckFor(store).added();
    // Last, as applyTransitions asks; each mail once in a round. It writes the applications' events with the moves
    // (mail.bounced, mail.complained: events/application-event-data.ts), counted in the statistics; the counters
    // and statistics of every round are written once, after the last (applyGroup).
    await applyTransitions(
      trx,
      changes.map(({ transition }) => transition),
      { counts: moves.counts, statistics: moves.statistics },
    );
    return results;
  }

  /**
   * What one report says about its mail's recipients, read against the mail as it stands (no store access). Only
   * `named`, the recipient its return path names, can be affected: a report naming another recipient of the mail
   * (one recipient bouncing or complaining on another's behalf) changes nothing for that one. A report of one
   * block whose address differs from `named` (a forward, a rewritten address) is taken as about `named`.
   */
  function effectOf(parsed: ParsedReport, mail: repo.BouncedMail | undefined, named: string | undefined, at: number): ReportEffect {
    const applied: Applied[] = [];
    const marks: ReportEffect['marks'] = [];
    const suppressions: NewSuppression[] = [];
    const detailRecipients: Array<Record<string, unknown>> = [];
    if (mail) {
      const own = named === undefined ? undefined : mail.recipients.find((r) => r.address === named);
      const target = (address: string, alone: boolean) => (own && (own.address.toLowerCase() === address || alone) ? own : undefined);
      if (parsed.kind === 'dsn') {
        for (const entry of parsed.recipients) {
          const recipient = target(entry.recipient, parsed.recipients.length === 1);
          const hard = entry.action === 'failed' && entry.status.startsWith('5');
          const delayed = entry.action === 'delayed' || (entry.action === 'failed' && entry.status.startsWith('4'));
          // A recipient already bounced or complained is final: a report about it changes nothing (no event).
          const final = recipient !== undefined && isFinalAfterDelivery(recipient.outcome);
          const outcome: Applied['outcome'] =
            (hard || delayed) && final
              ? 'unchanged'
              : (hard || delayed) && !recipient
                ? 'unknown_recipient' // about nobody this return path names: not even a delayed event
                : hard
                  ? 'bounced'
                  : delayed
                    ? 'delayed'
                    : 'soft';
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
          suppressions.push({ address: recipient.address, reason: 'hard_bounce', mailId: mail.id, detail: reply, createdBy: 'bounce', at });
        }
      } else if (parsed.kind === 'arf' && parsed.feedback) {
        const named = parsed.feedback.recipients.length > 0 ? parsed.feedback.recipients : [''];
        for (const address of named) {
          const recipient = target(address, named.length === 1);
          if (!recipient) {
            applied.push({ recipient: address, outcome: 'unknown_recipient' });
            continue;
          }
          if (isFinalAfterDelivery(recipient.outcome)) {
            applied.push({ recipient: recipient.address, outcome: 'unchanged' });
            continue;
          }
          const reply = `Complaint (Feedback-Type: ${parsed.feedback.type})`;
          applied.push({ recipient: recipient.address, outcome: 'complained' });
          detailRecipients.push({ recipient: recipient.address, feedbackType: parsed.feedback.type });
          marks.push({ address: recipient.address, outcome: 'complained', reply });
          suppressions.push({ address: recipient.address, reason: 'complaint', mailId: mail.id, detail: reply, createdBy: 'bounce', at });
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
    return {
      summary,
      applied,
      marks,
      suppressions,
      detailRecipients,
      bounced: applied.some((a) => a.outcome === 'bounced'),
      complained: applied.some((a) => a.outcome === 'complained'),
      delayed: applied.some((a) => a.outcome === 'delayed'),
      feedbackType: parsed.kind === 'arf' ? (parsed.feedback?.type ?? undefined) : undefined,
    };
  }

  /** The mail's move (or its event alone) for a report that changed something; undefined when it changed nothing. */
  function transitionOf(
    mail: repo.BouncedMail,
    effect: ReportEffect,
    reportId: number,
    matchedBy: ReceivedReport['matchedBy'],
    at: number,
  ): Transition | undefined {
    const { bounced, complained, delayed, marks } = effect;
    const eventType = bounced ? 'bounced' : complained ? 'complained' : delayed ? 'bounce-delayed' : undefined;
    if (eventType === undefined) return undefined;
    const outcomes = new Map(mail.recipients.map((r) => [r.address, r.outcome]));
    for (const mark of marks) outcomes.set(mark.address, mark.outcome);
    const refused = countRefused(outcomes.values());
    const turnsFailed = bounced && mail.status === MailStatus.ProviderSent && ![...outcomes.values()].some(isDelivered);
    const firstBounce = marks.find((m) => m.outcome === 'bounced');
    return {
      id: mail.id,
      from: [mail.status as MailStatusCode],
      to: turnsFailed ? MailStatus.ProviderError : (mail.status as MailStatusCode),
      at,
      event: {
        type: eventType,
        actor: 'bounce',
        detail: {
          reportId,
          matchedBy,
          recipients: effect.detailRecipients,
          // The recipients this report moved, for the application event (events/application-event-data.ts).
          ...(marks.length > 0 ? { marked: marks.map((m) => m.address) } : {}),
          ...(complained && effect.feedbackType !== undefined ? { feedbackType: effect.feedbackType } : {}),
        },
      },
      ...(bounced
        ? { set: { rejectedRecipients: refused, ...(turnsFailed && firstBounce ? { providerReply: firstBounce.reply } : {}) } }
        : {}),
    };
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

  /**
   * RETENTION_DAYS (and `purge --older-than`): reports received before then go, matched or not, in batches of
   * 1,000 so no transaction holds the store for long. A mail's own reports go with it anyway (migration 021).
   */
  async function purgeReports(olderThanDays: number): Promise<number> {
    const before = clock.now() - olderThanDays * 86_400_000;
    let purged = 0;
    for (;;) {
      const deleted = await repo.deleteBounceReportsBefore(store.db, before, 1000);
      purged += deleted;
      if (deleted < 1000) return purged;
    }
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

  /** One page of a mail's reports, oldest first (keyset on received_at, id): the detail's and `…/{id}/bounces`. */
  async function listMailReports(
    mailId: number,
    query: { limit?: number | undefined; cursor?: string | undefined } = {},
  ): Promise<BouncesResponse> {
    const limit = query.limit ?? MAIL_DETAIL_BOUNCES;
    const rows = await repo.listMailBounceReports(store.db, mailId, {
      limit: limit + 1,
      after: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
    });
    const page = rows.slice(0, limit);
    return { data: page.map(toReport), meta: { nextCursor: rows.length > limit ? encodeCursor(page.at(-1)!) : null } };
  }

  return {
    returnPaths,
    receiveReport,
    /** False while the store's intake reserve is reached: the listener refuses reports (452) then. */
    hasRoom: () => reserve.hasRoomForIntake(),
    listReports,
    purgeReports,
    getReport,
    getRaw,
    listMailReports,
    idle: () => commits.idle(),
  };
}

export type BounceService = ReturnType<typeof createBounceService>;
