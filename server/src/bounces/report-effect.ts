/**
 * What a bounce report does to its mail (docs/bounces.md, "What it does"): pure rules, read against the mail
 * as it stands, with no store access, so each case is tested without a listener. bounce.service.ts matches a
 * report to its mail and writes what these return.
 */
import { MailStatus, type BounceSummary, type MailStatusCode } from '@outbox/contract';
import { countRefused, isDelivered, isFinalAfterDelivery } from '../mail/recipient-outcomes.js';
import type { Transition } from '../mail/transition-types.js';
import type { NewSuppression } from '../suppression/suppression.repository.js';
import type { BouncedMail } from './bounce.repository.js';
import type { ParsedReport } from './report-parser.js';

type Applied = BounceSummary['applied'][number];

/** How the report found its mail: by the return path it came back to (the only way since per-recipient paths). */
export type MatchedBy = 'return-path' | 'message-id' | null;

/** What a report does to its mail's recipients, worked out before anything is written. */
export interface ReportEffect {
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

/**
 * What one report says about its mail's recipients, read against the mail as it stands (no store access). Only
 * `named`, the recipient its return path names, can be affected: a report naming another recipient of the mail
 * (one recipient bouncing or complaining on another's behalf) changes nothing for that one. A report of one
 * block whose address differs from `named` (a forward, a rewritten address) is taken as about `named`.
 */
export function effectOf(parsed: ParsedReport, mail: BouncedMail | undefined, named: string | undefined, at: number): ReportEffect {
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
export function transitionOf(
  mail: BouncedMail,
  effect: ReportEffect,
  reportId: number,
  matchedBy: MatchedBy,
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
