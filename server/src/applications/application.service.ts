/**
 * Applications (docs/api.md#managing-applications-apiv1applications): an API key is an application. Operators
 * create, rename, revoke and rotate them from the console and the API, and the command line does the first and
 * the third; every change is in the audit log, never with a key in it. A key is a 256-bit random secret shown
 * once, when made; only its SHA-256 is kept.
 *
 * Nothing here is cached: `auth.findApiKeyPrincipal` asks the store on every request, so a revocation, or the
 * end of a rotation's grace, holds at once on every instance sharing the store (docs/decisions.md#api-keys-looked-up-on-every-request).
 */
import {
  LANE_CODES,
  laneOfCode,
  type Lane,
  APPLICATION_MAIL_COUNT_CAP,
  APPLICATION_NAME_PATTERN,
  DEFAULT_ROTATION_GRACE_SECONDS,
  MAX_ROTATION_GRACE_SECONDS,
  type Application,
  type ApplicationWithKey,
} from '@outbox/contract';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { badRequest, conflict, notFound } from '../errors.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import type { ApiKeyRow } from '../store/schema.js';
import { createSecret } from '../auth/password.js';
import * as repo from './application.repository.js';
import type { ContentRetention } from '../mail/content-retention.js';

const DAY_MS = 24 * 3600 * 1000;
/** Every key starts so, which tells it from an operator's token in logs and secret scanners. */
const KEY_PREFIX = 'obx_';

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

export function createApplicationService({
  store,
  clock,
  contentRetention,
}: {
  store: Store;
  clock: Clock;
  /** Sets an application's content retention (mail/content-retention.ts), for PATCH's `contentRetentionDays`. */
  contentRetention?: Pick<ContentRetention, 'setApplicationContentRetention'> | undefined;
}) {
  const { db } = store;

  function assertName(name: string): void {
    if (!APPLICATION_NAME_PATTERN.test(name)) throw badRequest('invalid_name', 'name must be 1 to 64 letters, digits or . _ @ -');
  }

  async function assertNameFree(trx: DbOrTrx, name: string, exceptId?: number): Promise<void> {
    const holder = await repo.findApplicationRowByName(trx, name);
    if (holder && Number(holder.id) !== exceptId) {
      throw conflict(
        'application_exists',
        holder.revoked_at === null
          ? `An application named ${name} exists already; pick another name.`
          : `A revoked application is named ${name}; rename it or pick another name.`,
      );
    }
  }

  async function describe(row: ApiKeyRow, now: number): Promise<Application> {
    const since = now - DAY_MS;
    // Revoked before the window began: it cannot have submitted anything in it.
    const counted =
      row.revoked_at !== null && Number(row.revoked_at) < since
        ? 0
        : await repo.countMailsSince(db, Number(row.id), since, APPLICATION_MAIL_COUNT_CAP);
    const previousKeyExpiresAt =
      row.previous_key_expires_at !== null && Number(row.previous_key_expires_at) > now ? Number(row.previous_key_expires_at) : null;
    return {
      id: Number(row.id),
      name: row.name,
      createdAt: iso(Number(row.created_at))!,
      createdBy: row.created_by,
      lastUsedAt: iso(row.last_used_at === null ? null : Number(row.last_used_at)),
      revokedAt: iso(row.revoked_at === null ? null : Number(row.revoked_at)),
      previousKeyExpiresAt: iso(previousKeyExpiresAt),
      mailsLast24h: Math.min(counted, APPLICATION_MAIL_COUNT_CAP),
      mailsLast24hIsLowerBound: counted > APPLICATION_MAIL_COUNT_CAP,
      lane: laneOfCode(Number(row.lane)),
      contentRetentionDays: row.content_retention_days === null ? null : Number(row.content_retention_days),
    };
  }

  async function getRow(trx: DbOrTrx, id: number): Promise<ApiKeyRow> {
    const row = await repo.findApplicationRow(trx, id);
    if (!row) throw notFound('application_not_found', `No application has the id ${id}.`);
    return row;
  }

  /** Every application, revoked ones included, by name. */
  async function listApplications(): Promise<Application[]> {
    const now = clock.now();
    const rows = await repo.listApplicationRows(db);
    return Promise.all(rows.map((row) => describe(row, now)));
  }

  async function getApplication(id: number): Promise<Application> {
    return describe(await getRow(db, id), clock.now());
  }

  async function createApplication(
    name: string,
    actor: string,
    { lane = 'transactional' }: { lane?: Lane } = {},
  ): Promise<ApplicationWithKey> {
    assertName(name);
    const { secret, hash } = createSecret(KEY_PREFIX);
    const now = clock.now();
    const row = await db.transaction().execute(async (trx) => {
      await assertNameFree(trx, name);
      const created = await repo.insertApplication(trx, { name, keyHash: hash, createdAt: now, createdBy: actor, lane: LANE_CODES[lane] });
      await insertAuditEntries(trx, [
        { at: now, actor, action: 'apikey.create', target: name, after: { id: Number(created.id), name, lane } },
      ]);
      return created;
    });
    return { ...(await describe(row, now)), key: secret };
  }

  async function renameApplication(id: number, name: string, actor: string): Promise<Application> {
    assertName(name);
    const now = clock.now();
    const row = await db.transaction().execute(async (trx) => {
      const before = await getRow(trx, id);
      if (before.name === name) return before;
      await assertNameFree(trx, name, id);
      const renamed = (await repo.renameApplication(trx, id, name))!;
      await insertAuditEntries(trx, [
        { at: now, actor, action: 'apikey.rename', target: name, before: { id, name: before.name }, after: { id, name } },
      ]);
      return renamed;
    });
    return describe(row, now);
  }

  /**
   * Moves an application to a lane (docs/lanes.md): its mails accepted from now on go there unless they name their own;
   * mails already waiting keep theirs. Answers the lane it was in.
   */
  async function setApplicationLane(key: { id: number } | { name: string }, lane: Lane, actor: string): Promise<Lane> {
    const now = clock.now();
    return db.transaction().execute(async (trx) => {
      const row = 'id' in key ? await getRow(trx, key.id) : await repo.findApplicationRowByName(trx, key.name);
      if (!row) throw notFound('application_not_found', `No application is named ${'name' in key ? key.name : ''}.`);
      if (row.revoked_at !== null) throw conflict('application_revoked', `The application ${row.name} is revoked.`);
      const before = laneOfCode(Number(row.lane));
      if (before === lane) return before;
      await repo.setApplicationLane(trx, Number(row.id), LANE_CODES[lane]);
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'apikey.lane',
          target: row.name,
          before: { id: Number(row.id), lane: before },
          after: { id: Number(row.id), lane },
        },
      ]);
      return before;
    });
  }

  /** PATCH: the name, the lane and the content retention, each when given; one audit entry per change. */
  async function updateApplication(
    id: number,
    changes: { name?: string | undefined; lane?: Lane | undefined; contentRetentionDays?: number | null | undefined },
    actor: string,
  ): Promise<Application> {
    if (changes.name !== undefined) await renameApplication(id, changes.name, actor);
    if (changes.lane !== undefined) await setApplicationLane({ id }, changes.lane, actor);
    if (changes.contentRetentionDays !== undefined) {
      if (!contentRetention) throw new Error('updateApplication: no content retention service');
      await getRow(db, id);
      await contentRetention.setApplicationContentRetention({ id }, changes.contentRetentionDays, actor);
    }
    return getApplication(id);
  }

  async function revoke(trx: DbOrTrx, row: ApiKeyRow, actor: string, now: number): Promise<ApiKeyRow> {
    const revoked = await repo.revokeApplication(trx, Number(row.id), now);
    if (!revoked) throw conflict('application_revoked', `The application ${row.name} is revoked already.`);
    await insertAuditEntries(trx, [
      { at: now, actor, action: 'apikey.revoke', target: row.name, after: { id: Number(row.id), revokedAt: iso(now) } },
    ]);
    return revoked;
  }

  /** Refused at once on every instance: the next request with its key (or its previous one) is answered 401. */
  async function revokeApplication(id: number, actor: string): Promise<Application> {
    const now = clock.now();
    const row = await db.transaction().execute(async (trx) => revoke(trx, await getRow(trx, id), actor, now));
    return describe(row, now);
  }

  /** The command line's `apikey revoke NAME`. */
  async function revokeApplicationByName(name: string, actor: string): Promise<void> {
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      const row = await repo.findApplicationRowByName(trx, name);
      if (!row || row.revoked_at !== null) throw notFound('api_key_not_found', `No active API key is named ${name}.`);
      await revoke(trx, row, actor, now);
    });
  }

  /**
   * A new key, shown once; the one it replaces keeps working for `graceSeconds` (0 to 24 h), then is refused
   * like an unknown key. A key replaced by an earlier rotation and still in its grace stops now.
   */
  async function rotateApplicationKey(id: number, graceSeconds: number | undefined, actor: string): Promise<ApplicationWithKey> {
    const grace = graceSeconds ?? DEFAULT_ROTATION_GRACE_SECONDS;
    if (!Number.isInteger(grace) || grace < 0 || grace > MAX_ROTATION_GRACE_SECONDS) {
      throw badRequest('invalid_grace', `graceSeconds must be a whole number from 0 to ${MAX_ROTATION_GRACE_SECONDS}`);
    }
    const { secret, hash } = createSecret(KEY_PREFIX);
    const now = clock.now();
    const previousKeyExpiresAt = grace === 0 ? null : now + grace * 1000;
    const row = await db.transaction().execute(async (trx) => {
      const current = await getRow(trx, id);
      if (current.revoked_at !== null)
        throw conflict('application_revoked', `The application ${current.name} is revoked; a revoked key cannot be rotated.`);
      const rotated = await repo.rotateApplicationKey(trx, id, {
        currentKeyHash: current.key_hash,
        newKeyHash: hash,
        previousKeyExpiresAt,
      });
      if (!rotated) throw conflict('application_changed', `The application ${current.name} changed meanwhile; try again.`);
      await insertAuditEntries(trx, [
        {
          at: now,
          actor,
          action: 'apikey.rotate',
          target: current.name,
          after: { id, graceSeconds: grace, previousKeyExpiresAt: iso(previousKeyExpiresAt) },
        },
      ]);
      return rotated;
    });
    return { ...(await describe(row, now)), key: secret };
  }

  return {
    listApplications,
    getApplication,
    createApplication,
    renameApplication,
    setApplicationLane,
    updateApplication,
    revokeApplication,
    revokeApplicationByName,
    rotateApplicationKey,
  };
}

export type ApplicationService = ReturnType<typeof createApplicationService>;
