/**
 * What comes back after the relay's 250 (docs/bounces.md): each report the bounce listener takes is parsed
 * (report-parser.ts), matched to its mail and recipient by the return path it came back to, and kept, matched or
 * not; what it changes is decided in report-effect.ts, and the operators' reads are in bounce-reports.ts. A hard bounce marks its recipient `bounced` and suppresses the address; when no recipient is
 * left accepted the mail goes ProviderSent → ProviderError. A delayed report only adds an event. A complaint
 * marks its recipient `complained` and suppresses the address. Reports share commits (group-commit.ts), so a
 * burst of bounces costs a share of an fsync each, not a whole one.
 */
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import { createGroupCommit, type GroupCommit } from '../store/group-commit.js';
import { createSpaceReserve, INTAKE_RESERVE_BYTES } from '../store/space-reserve.js';
import { applyTransitions } from '../mail/write/apply.js';
import { moveStatusCounts } from '../mail/write/counters.js';
import type { StatusCountMoves } from '../mail/transition-types.js';
import { createStatisticsMoves, type StatisticsMoves } from '../statistics/statistics-moves.js';
import { writeStatistics } from '../statistics/statistics.repository.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import { suppressionCheckFor } from '../suppression/suppression-check.js';
import { upsertSuppressions } from '../suppression/suppression.repository.js';
import * as repo from './bounce.repository.js';
import { createBounceReports } from './bounce-reports.js';
import { effectOf, transitionOf, type MatchedBy } from './report-effect.js';
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
  matchedBy: MatchedBy;
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
   * Applies a group's reports set-wise, for speed: one read of the mails and their recipients, one INSERT
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
      // The earlier per-mail form names a recipient only where the mail had one (docs/bounces.md#what-is-matched).
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

  return {
    returnPaths,
    receiveReport,
    /** False while the store's intake reserve is reached: the listener refuses reports (452) then. */
    hasRoom: () => reserve.hasRoomForIntake(),
    ...createBounceReports({ store, clock }),
    idle: () => commits.idle(),
  };
}

export type BounceService = ReturnType<typeof createBounceService>;
