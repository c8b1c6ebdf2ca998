/**
 * What an application (an API key) may read of its own mails (docs/api.md#applications-reading-your-own-mails): the
 * list (`status`, `messageId`, `idempotencyKey`, newest first, keyset on id), the detail and the raw message.
 * Another key's mail, or a mail no key submitted, answers 404 exactly as an unknown id does, so a key cannot
 * even learn which ids exist. Operators' `messageId=` / `idempotencyKey=` lookups use the same read across
 * every key. The operators' other lists stay with the list planner (mail.service.ts).
 */
import { STATUSES, type Mail, type MailDetail, type MailListMeta } from '@outbox/contract';
import { badRequest } from '../errors.js';
import type { Store } from '../store/connection.js';
import {
  countApplicationMailsUpTo,
  findMailApiKeyId,
  listApplicationMailRows,
  type ApplicationMailFilter,
} from './application-reads.repository.js';
import { mailNotFound } from './mail-actions.js';
import { toMail } from './mail-mapping.js';
import { getStatusCounts, listRecipients } from './mail.repository.js';
import type { MailService } from './mail.service.js';

/** An API key's page: at most this many (default APPLICATION_DEFAULT_LIMIT). */
export const APPLICATION_MAX_LIMIT = 100;
export const APPLICATION_DEFAULT_LIMIT = 50;
/** Matches are counted up to this many; past it `meta.total` says this and `meta.totalIsEstimate` is true. */
export const APPLICATION_COUNT_CAP = 10_000;
/** An operator's exact lookup (a Message-ID, an idempotency key) matches few mails; one page holds them. */
const OPERATOR_LOOKUP_LIMIT = 500;

export interface ApplicationListInput {
  statuses?: number[] | undefined;
  messageId?: string | undefined;
  idempotencyKey?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
  /** Query parameters given that this read does not take (named in the 400). */
  otherParameters: string[];
}

/** The cursor of this read: the last id of the page, opaque (base64url JSON), not the planner's format. */
function encodeCursor(id: number): string {
  return Buffer.from(JSON.stringify({ before: id })).toString('base64url');
}

function decodeCursor(cursor: string): number {
  try {
    const value = (JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { before?: unknown }).before;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  } catch {
    // answered below
  }
  throw badRequest('invalid_cursor', 'query.cursor is not a cursor of this list; pass meta.nextCursor as it was given.');
}

export function createApplicationReads({ store, mails }: { store: Store; mails: MailService }) {
  const { db } = store;

  /** The mail, if this key submitted it; otherwise the same 404 as an unknown id. */
  async function ensureOwn(apiKeyId: number, id: number): Promise<void> {
    const owner = await findMailApiKeyId(db, id);
    if (!owner || owner.apiKeyId !== apiKeyId) throw mailNotFound(id);
  }

  /**
   * An API key's own mails (`apiKeyId`), or an operator's exact lookup (null): newest first, one keyset page.
   * Parameters of the operators' list (q, dates, sort, order) are refused by name rather than ignored.
   */
  async function listMails(apiKeyId: number | null, input: ApplicationListInput): Promise<{ data: Mail[]; meta: MailListMeta }> {
    const [other] = input.otherParameters;
    if (other !== undefined) {
      throw badRequest(
        'invalid_query',
        apiKeyId !== null
          ? `query.${other} is for operators; an API key lists its own mails by status, messageId and idempotencyKey (with limit and cursor).`
          : `query.${other} cannot be combined with messageId or idempotencyKey, which select exact mails (status, limit and cursor may be).`,
      );
    }
    const maxLimit = apiKeyId !== null ? APPLICATION_MAX_LIMIT : OPERATOR_LOOKUP_LIMIT;
    if (input.limit !== undefined && input.limit > maxLimit)
      throw badRequest('invalid_query', `query.limit must be <= ${maxLimit} for API keys.`);
    const limit = input.limit ?? (apiKeyId !== null ? APPLICATION_DEFAULT_LIMIT : OPERATOR_LOOKUP_LIMIT);
    const beforeId = input.cursor !== undefined ? decodeCursor(input.cursor) : undefined;
    const filter: ApplicationMailFilter = {
      apiKeyId,
      messageId: input.messageId,
      idempotencyKey: input.idempotencyKey,
      statuses: input.statuses,
    };
    const [rows, matching, counts] = await Promise.all([
      listApplicationMailRows(db, filter, beforeId, limit + 1),
      countApplicationMailsUpTo(db, filter, APPLICATION_COUNT_CAP),
      // The store's counters are the operators' business; an application sees none.
      apiKeyId === null ? getStatusCounts(db) : Promise.resolve(undefined),
    ]);
    const page = rows.slice(0, limit);
    const recipients = await listRecipients(
      db,
      page.map((r) => r.id),
    );
    return {
      data: page.map((row) => toMail(row, recipients.get(row.id))),
      meta: {
        total: Math.min(matching, APPLICATION_COUNT_CAP),
        totalIsLowerBound: matching > APPLICATION_COUNT_CAP,
        totalIsEstimate: false,
        nextCursor: rows.length > limit ? encodeCursor(page.at(-1)!.id) : null,
        prevCursor: null,
        lastCursor: null,
        counts: counts ? Object.fromEntries(STATUSES.map((s) => [String(s.code), counts.get(s.code) ?? 0])) : {},
      },
    };
  }

  return {
    listMails,
    async getMailDetail(apiKeyId: number, id: number): Promise<MailDetail & { eventsNextCursor: string | null }> {
      await ensureOwn(apiKeyId, id);
      return mails.getMailDetail(id);
    },
    async listMailEvents(apiKeyId: number, id: number, query: { limit?: number | undefined; cursor?: string | undefined }) {
      await ensureOwn(apiKeyId, id);
      return mails.listMailEvents(id, query);
    },
    /** 404 unless the mail is this key's own (the reads of its reports check so first). */
    ensureOwn,
    async getRawMessage(apiKeyId: number, id: number): Promise<Buffer> {
      await ensureOwn(apiKeyId, id);
      return mails.getRawMessage(id);
    },
  };
}

export type ApplicationReads = ReturnType<typeof createApplicationReads>;
