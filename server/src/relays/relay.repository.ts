/**
 * All SQL about relays and routes (migration 029, docs/relays.md). Functions take `db | trx` first. A relay's
 * login lives in `relay_credentials`, read only by `loadRoutingRows` (the worker's) and never joined into a read
 * the API answers.
 */
import type { DbOrTrx } from '../store/connection.js';
import type { RelayRow, RouteRow } from '../store/schema.js';

export function listRelayRows(db: DbOrTrx): Promise<RelayRow[]> {
  return db.selectFrom('relays').selectAll().orderBy('name').execute();
}

export function findRelayRow(db: DbOrTrx, id: number): Promise<RelayRow | undefined> {
  return db.selectFrom('relays').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findRelayRowByName(db: DbOrTrx, name: string): Promise<RelayRow | undefined> {
  return db.selectFrom('relays').selectAll().where('name', '=', name).executeTakeFirst();
}

/** The ids of the relays that have a login (for `hasCredentials`); the login itself is not read. */
export async function relayIdsWithCredentials(db: DbOrTrx): Promise<Set<number>> {
  const rows = await db.selectFrom('relay_credentials').select('relay_id').execute();
  return new Set(rows.map((r) => Number(r.relay_id)));
}

/** What an operator sets on a relay: its row's columns but the id and the timestamps (the login is apart). */
export type RelayValues = Pick<RelayRow, 'name' | 'url' | 'tls' | 'max_connections' | 'max_per_second' | 'max_per_day'>;

export function insertRelay(db: DbOrTrx, values: RelayValues & { created_at: number }): Promise<RelayRow> {
  return db
    .insertInto('relays')
    .values({ ...values, updated_at: values.created_at })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function updateRelay(db: DbOrTrx, id: number, values: Partial<RelayValues> & { updated_at: number }): Promise<RelayRow | undefined> {
  return db.updateTable('relays').set(values).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function deleteRelay(db: DbOrTrx, id: number): Promise<void> {
  await db.deleteFrom('relay_credentials').where('relay_id', '=', id).execute();
  await db.deleteFrom('relays').where('id', '=', id).execute();
}

/** Sets (or, with null, removes) a relay's login. */
export async function setRelayCredentials(
  db: DbOrTrx,
  relayId: number,
  credentials: { username: string; password: string } | null,
): Promise<void> {
  await db.deleteFrom('relay_credentials').where('relay_id', '=', relayId).execute();
  if (credentials)
    await db
      .insertInto('relay_credentials')
      .values({ relay_id: relayId, username: credentials.username, password: credentials.password })
      .execute();
}

export function listRouteRows(db: DbOrTrx): Promise<RouteRow[]> {
  return db.selectFrom('routes').selectAll().orderBy('position').execute();
}

/** The whole ordered list at once: the old rows go, the new ones come, in the caller's transaction. */
export async function replaceRoutes(db: DbOrTrx, routes: ReadonlyArray<Omit<RouteRow, 'id'>>): Promise<void> {
  await db.deleteFrom('routes').execute();
  if (routes.length > 0) await db.insertInto('routes').values(routes).execute();
}

/** Everything the worker routes by: relays with their logins, and the routes in order. */
export async function loadRoutingRows(db: DbOrTrx): Promise<{
  relays: Array<RelayRow & { username: string | null; password: string | null }>;
  routes: RouteRow[];
}> {
  const relays = await db
    .selectFrom('relays')
    .leftJoin('relay_credentials', 'relay_credentials.relay_id', 'relays.id')
    .selectAll('relays')
    .select(['relay_credentials.username', 'relay_credentials.password'])
    .execute();
  return { relays, routes: await listRouteRows(db) };
}
