/**
 * Reads a report that came back (docs/bounces.md#what-is-read): RFC 3464 delivery status notifications and
 * RFC 5965 feedback reports (complaints). MIME is mailparser's (`keepDeliveryStatus` keeps the
 * message/delivery-status part as an attachment); it leaves the report fields raw, so their header-style blocks
 * are read here. Never throws: a message it cannot read is kind `unknown`, kept for the operator. Every field it
 * answers is capped (report-limits.ts), since each is copied into the store, some of them several times.
 */
import { simpleParser, type Attachment } from 'mailparser';
import { capNullable, capText, DIAGNOSTIC_MAX_BYTES, MAX_REPORT_RECIPIENTS, SHORT_FIELD_MAX_BYTES } from './report-limits.js';

export interface DsnRecipient {
  /** The address the report is about (Final-Recipient, else Original-Recipient), lower-cased. */
  recipient: string;
  /** failed | delayed | delivered | relayed | expanded (RFC 3464 §2.3.3), lower-cased. */
  action: string;
  /** The enhanced status code, e.g. 5.1.1. */
  status: string;
  /** The remote MTA's reply, e.g. `smtp; 550 5.1.1 user unknown`. */
  diagnostic: string | null;
}

export interface ParsedReport {
  kind: 'dsn' | 'arf' | 'unknown';
  /** DSN: one entry per recipient block. */
  recipients: DsnRecipient[];
  /** ARF: Feedback-Type (abuse, fraud, …) and the complaining recipients (Original-Rcpt-To, else the returned To). */
  feedback: { type: string; recipients: string[]; userAgent: string | null } | null;
  /** The returned message's Message-ID, with its angle brackets, when the report carries its headers. */
  originalMessageId: string | null;
  /** The report's own Subject, for the operator's list. */
  subject: string | null;
  /** Why it could not be read, for kind `unknown`. */
  problem: string | null;
}

type Fields = Map<string, string>;

/** Header-style blocks separated by empty lines (the per-message and per-recipient fields of RFC 3464 §2.1). */
export function readFieldBlocks(text: string): Fields[] {
  const blocks: Fields[] = [];
  let current: Fields = new Map();
  let last: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (current.size > 0) blocks.push(current);
      current = new Map();
      last = undefined;
      continue;
    }
    if (/^[ \t]/.test(line) && last !== undefined) {
      current.set(last, `${current.get(last)!} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    last = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    // Repeated fields (Original-Rcpt-To may be) are kept joined by a newline.
    current.set(last, current.has(last) ? `${current.get(last)!}\n${value}` : value);
  }
  if (current.size > 0) blocks.push(current);
  return blocks;
}

/** `rfc822; Ann <ann@example.com>` → `ann@example.com`. */
export function addressOfField(value: string | undefined): string | null {
  if (value === undefined) return null;
  const typed = /^[a-z0-9-]+\s*;\s*(.*)$/i.exec(value.trim());
  const rest = (typed ? typed[1]! : value).trim();
  const bracketed = /<([^<>\s]+@[^<>\s]+)>/.exec(rest);
  const address = bracketed ? bracketed[1]! : /[^\s<>,;"]+@[^\s<>,;"]+/.exec(rest)?.[0];
  return address ? address.toLowerCase() : null;
}

function headerBlockOf(content: Buffer): string {
  const text = content.toString('utf8');
  const end = text.search(/\r?\n\r?\n/);
  return end < 0 ? text : text.slice(0, end);
}

export async function parseReport(raw: Buffer): Promise<ParsedReport> {
  return capReport(await readReport(raw));
}

/** The report with every field within report-limits.ts's caps, the recipient lists included. */
function capReport(report: ParsedReport): ParsedReport {
  const blocks = report.recipients.length;
  const complainers = report.feedback?.recipients.length ?? 0;
  const cut = blocks > MAX_REPORT_RECIPIENTS || complainers > MAX_REPORT_RECIPIENTS;
  const short = (text: string) => capText(text, SHORT_FIELD_MAX_BYTES);
  return {
    kind: report.kind,
    recipients: report.recipients.slice(0, MAX_REPORT_RECIPIENTS).map((entry) => ({
      recipient: short(entry.recipient),
      action: short(entry.action),
      status: short(entry.status),
      diagnostic: capNullable(entry.diagnostic, DIAGNOSTIC_MAX_BYTES),
    })),
    feedback: report.feedback && {
      type: short(report.feedback.type),
      recipients: report.feedback.recipients.slice(0, MAX_REPORT_RECIPIENTS).map(short),
      userAgent: capNullable(report.feedback.userAgent, SHORT_FIELD_MAX_BYTES),
    },
    originalMessageId: capNullable(report.originalMessageId, DIAGNOSTIC_MAX_BYTES),
    subject: capNullable(report.subject, DIAGNOSTIC_MAX_BYTES),
    problem: cut
      ? `Only the first ${MAX_REPORT_RECIPIENTS} of ${Math.max(blocks, complainers)} recipients were read.`
      : capNullable(report.problem, DIAGNOSTIC_MAX_BYTES),
  };
}

async function readReport(raw: Buffer): Promise<ParsedReport> {
  const report: ParsedReport = { kind: 'unknown', recipients: [], feedback: null, originalMessageId: null, subject: null, problem: null };
  let attachments: Attachment[];
  try {
    const parsed = await simpleParser(raw, {
      keepDeliveryStatus: true,
      // Only the report parts are read: the body's text and HTML conversions are skipped (about a sixth of the parse).
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipTextLinks: true,
      skipImageLinks: true,
    });
    report.subject = parsed.subject ?? null;
    attachments = parsed.attachments;
  } catch (error) {
    report.problem = `The message could not be parsed: ${error instanceof Error ? error.message : String(error)}`;
    return report;
  }
  let returnedTo: string | null = null;
  const part = (...types: string[]) => attachments.find((a) => types.includes(a.contentType.toLowerCase()));

  const returned = part('message/rfc822', 'text/rfc822-headers', 'message/rfc822-headers');
  if (returned) {
    const headers = readFieldBlocks(headerBlockOf(returned.content))[0];
    const messageId = headers?.get('message-id');
    if (messageId) report.originalMessageId = /<[^<>\s]+>/.exec(messageId)?.[0] ?? null;
    const to = headers?.get('to');
    if (to) returnedTo = addressOfField(to);
  }

  const status = part('message/delivery-status', 'message/global-delivery-status');
  const feedback = part('message/feedback-report');
  if (status) {
    // The first block is about the message (Reporting-MTA …); each later one is about a recipient.
    for (const fields of readFieldBlocks(status.content.toString('utf8')).slice(1)) {
      const recipient = addressOfField(fields.get('final-recipient')) ?? addressOfField(fields.get('original-recipient'));
      const action = fields.get('action')?.toLowerCase();
      const statusCode = /\d\.\d{1,3}\.\d{1,3}/.exec(fields.get('status') ?? '')?.[0];
      if (!recipient || !action || !statusCode) continue;
      report.recipients.push({ recipient, action, status: statusCode, diagnostic: fields.get('diagnostic-code') ?? null });
    }
    if (report.recipients.length > 0) report.kind = 'dsn';
    else report.problem = 'The delivery-status part names no recipient with an Action and a Status.';
  } else if (feedback) {
    const fields = readFieldBlocks(feedback.content.toString('utf8'))[0] ?? new Map<string, string>();
    const recipients = (fields.get('original-rcpt-to') ?? '')
      .split('\n')
      .map((value) => addressOfField(value))
      .filter((address): address is string => address !== null);
    if (recipients.length === 0 && returnedTo) recipients.push(returnedTo);
    report.kind = 'arf';
    report.feedback = {
      type: fields.get('feedback-type')?.toLowerCase() ?? 'abuse',
      recipients,
      userAgent: fields.get('user-agent') ?? null,
    };
  } else {
    report.problem = 'Neither a message/delivery-status nor a message/feedback-report part was found.';
  }
  return report;
}
