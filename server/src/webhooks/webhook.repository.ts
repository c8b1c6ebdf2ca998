/**
 * The SQL of webhook endpoints (store/migrations/007-webhooks.ts): create, change, delete and list them with their
 * application and their attempts of the last 24 hours; their failing streaks and disables, written by the
 * dispatcher's outcomes (endpoint-disable.ts). The fan-out and the claims are webhook-dispatch.repository.ts, the
 * delivery log webhook-log.repository.ts.
 */
import { sql } from 'kysely';
import type { DbOrTrx } from '../store/connection.js';
import type { WebhookEndpointRow } from '../store/schema.js';

export type EndpointWithApplication = WebhookEndpointRow & { application_name: string | null };

function selectEndpoints(db: DbOrTrx) {
  return db
    .selectFrom('webhook_endpoints as e')
    .leftJoin('api_keys as k', 'k.id', 'e.api_key_id')
    .selectAll('e')
    .select('k.name as application_name');
}

export function listEndpoints(db: DbOrTrx): Promise<EndpointWithApplication[]> {
  return selectEndpoints(db).orderBy('e.id').execute();
}

export function findEndpoint(db: DbOrTrx, id: number): Promise<EndpointWithApplication | undefined> {
  return selectEndpoints(db).where('e.id', '=', id).executeTakeFirst();
}

export interface NewEndpoint {
  url: string;
  description: string;
  event_types: string;
  api_key_id: number | null;
  enabled: number;
  disabled_reason: string | null;
  secret: string;
  created_at: number;
  updated_at: number;
}

export async function insertEndpoint(db: DbOrTrx, endpoint: NewEndpoint): Promise<number> {
  const row = await db.insertInto('webhook_endpoints').values(endpoint).returning('id').executeTakeFirstOrThrow();
  return Number(row.id);
}

export type EndpointChange = Partial<
  Pick<
    WebhookEndpointRow,
    | 'url'
    | 'description'
    | 'event_types'
    | 'api_key_id'
    | 'enabled'
    | 'disabled_reason'
    | 'secret'
    | 'previous_secret'
    | 'previous_secret_expires_at'
    | 'failing_since'
  >
> & { updated_at: number };

/** True when the endpoint exists (and was changed). */
export async function updateEndpoint(db: DbOrTrx, id: number, change: EndpointChange): Promise<boolean> {
  const result = await db.updateTable('webhook_endpoints').set(change).where('id', '=', id).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Deletes the endpoint with its deliveries and attempts; true when it existed. */
export async function deleteEndpoint(db: DbOrTrx, id: number): Promise<boolean> {
  await db.deleteFrom('webhook_attempts').where('endpoint_id', '=', id).execute();
  await db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
  const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Attempts and successes per endpoint since `since` (the endpoints' 24-hour success rate). */
export async function countAttemptsSince(db: DbOrTrx, since: number): Promise<Map<number, { attempts: number; succeeded: number }>> {
  const rows = await db
    .selectFrom('webhook_attempts')
    .select(['endpoint_id', sql<number>`count(*)`.as('attempts'), sql<number>`coalesce(sum(succeeded), 0)`.as('succeeded')])
    .where('at', '>=', since)
    .groupBy('endpoint_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.endpoint_id), { attempts: Number(r.attempts), succeeded: Number(r.succeeded) }]));
}

export async function findApplication(db: DbOrTrx, id: number): Promise<{ id: number; name: string } | undefined> {
  return db.selectFrom('api_keys').select(['id', 'name']).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
}

export async function findApplicationByName(db: DbOrTrx, name: string): Promise<{ id: number; name: string } | undefined> {
  return db.selectFrom('api_keys').select(['id', 'name']).where('name', '=', name).where('revoked_at', 'is', null).executeTakeFirst();
}
export function listEnabledEndpoints(db: DbOrTrx): Promise<WebhookEndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('enabled', '=', 1).execute();
}
export async function listEndpointUrls(db: DbOrTrx, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('webhook_endpoints').select(['id', 'url']).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [Number(r.id), r.url]));
}
/** Endpoints that answered 2xx: no longer failing. */
export async function clearFailing(db: DbOrTrx, endpointIds: number[]): Promise<void> {
  if (endpointIds.length === 0) return;
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: null })
    .where('id', 'in', endpointIds)
    .where('failing_since', 'is not', null)
    .execute();
}

/** Endpoints whose attempt failed: failing since then, unless they already were. */
export async function markFailing(db: DbOrTrx, endpointIds: number[], at: number): Promise<void> {
  if (endpointIds.length === 0) return;
  await db
    .updateTable('webhook_endpoints')
    .set({ failing_since: at })
    .where('id', 'in', endpointIds)
    .where('failing_since', 'is', null)
    .execute();
}

/** An endpoint that succeeded, then failed again within one group: failing since that failure. */
export async function restartFailing(db: DbOrTrx, endpointId: number, at: number): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ failing_since: at }).where('id', '=', endpointId).execute();
}

/**
 * Disables an enabled endpoint for `reason` (gone, failing); answers whether it did, so the caller audits
 * only a real change.
 */
export async function disableEndpoint(db: DbOrTrx, id: number, reason: string, at: number, failingBefore?: number): Promise<boolean> {
  let query = db
    .updateTable('webhook_endpoints')
    .set({ enabled: 0, disabled_reason: reason, updated_at: at })
    .where('id', '=', id)
    .where('enabled', '=', 1);
  if (failingBefore !== undefined) query = query.where('failing_since', '<=', failingBefore);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
/**
 * The enabled endpoint failing the longest, and for how long (the alert rule `webhook_failing`,
 * alerts/alert-rules.ts's WebhookFailureSource); undefined when none is failing.
 */
export async function longestFailingEndpoint(db: DbOrTrx, now: number): Promise<{ endpointId: number; failingForMs: number } | undefined> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'failing_since'])
    .where('enabled', '=', 1)
    .where('failing_since', 'is not', null)
    .orderBy('failing_since')
    .limit(1)
    .executeTakeFirst();
  return row && row.failing_since !== null ? { endpointId: Number(row.id), failingForMs: now - Number(row.failing_since) } : undefined;
}
