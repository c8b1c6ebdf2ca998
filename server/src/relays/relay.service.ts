/**
 * Named relays and routes (docs/relays.md), for the API and the command line:
 * the checks, the audit entries and the answers. A relay's login is write-only: it goes into `relay_credentials`
 * and comes out only to the worker (routing-table.ts); answers and audit entries say `hasCredentials` at most.
 * Every change tells this process's worker at once (`routingDirectoryFor(store).changed()`).
 */
import {
  DEFAULT_RELAY_NAME,
  LANE_CODES,
  laneOfCode,
  RELAY_NAME_PATTERN,
  type CreateRelayBody,
  type Relay,
  type Route,
  type RouteInput,
  type UpdateRelayBody,
} from '@outbox/contract';
import { insertAuditEntries } from '../audit/audit.repository.js';
import type { Clock } from '../clock.js';
import { badRequest, conflict, notFound } from '../errors.js';
import type { DbOrTrx, Store } from '../store/connection.js';
import type { RelayRow, RouteRow } from '../store/schema.js';
import * as repo from './relay.repository.js';
import { DEFAULT_RELAY_ID, routingDirectoryFor } from './routing-table.js';

const DEFAULT_MAX_CONNECTIONS = 5;
const DOMAIN_PATTERN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i;

type Credentials = { username: string; password: string };

const iso = (ms: number) => new Date(Number(ms)).toISOString();

function describeRelay(row: RelayRow, hasCredentials: boolean): Relay {
  return {
    id: Number(row.id),
    name: row.name,
    url: row.url,
    tls: row.tls as Relay['tls'],
    hasCredentials,
    maxConnections: Number(row.max_connections),
    maxPerSecond: row.max_per_second === null ? null : Number(row.max_per_second),
    maxPerDay: row.max_per_day === null ? null : Number(row.max_per_day),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

/**
 * The URL as kept (scheme, host, port: never a login) and the login it carried, if any. 400 naming `field` for
 * anything but smtp:// or smtps:// with a host.
 */
export function parseRelayUrl(
  input: string,
  field = 'body.url',
): { url: string; host: string; secure: boolean; credentials?: Credentials } {
  let parsed: URL;
  try {
    parsed = new URL(input.trim());
  } catch {
    throw badRequest('invalid_url', `${field} must be a URL such as smtp://relay.example.com:587.`);
  }
  if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:')
    throw badRequest('invalid_url', `${field} must start with smtp:// or smtps://.`);
  if (!parsed.hostname) throw badRequest('invalid_url', `${field} must name a host.`);
  if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search || parsed.hash)
    throw badRequest('invalid_url', `${field} must be scheme, host and port only (no path or query).`);
  const credentials = parsed.username
    ? { username: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) }
    : undefined;
  if (credentials && !credentials.password) throw badRequest('invalid_url', `${field} names a user without a password.`);
  const url = `${parsed.protocol}//${parsed.host}`;
  return { url, host: parsed.hostname, secure: parsed.protocol === 'smtps:', ...(credentials ? { credentials } : {}) };
}

function assertName(name: string, field: string): void {
  if (!RELAY_NAME_PATTERN.test(name)) throw badRequest('invalid_name', `${field} must be 1 to 64 letters, digits or . _ -.`);
  if (name.toLowerCase() === DEFAULT_RELAY_NAME)
    throw badRequest('invalid_name', `${field} may not be "${DEFAULT_RELAY_NAME}": routes use it for RELAY_URL.`);
}

function normalizeDomain(pattern: string | null | undefined, field: string): string | null {
  if (pattern === null || pattern === undefined) return null;
  const domain = pattern.trim().toLowerCase().replace(/\.$/, '');
  if (!DOMAIN_PATTERN.test(domain)) throw badRequest('invalid_domain', `${field} must be a domain such as example.com or *.example.com.`);
  return domain;
}

export function createRelayService({ store, clock }: { store: Store; clock: Clock }) {
  const { db } = store;
  const directory = routingDirectoryFor(store);

  async function describe(trx: DbOrTrx, row: RelayRow): Promise<Relay> {
    return describeRelay(row, (await repo.relayIdsWithCredentials(trx)).has(Number(row.id)));
  }

  async function assertNameFree(trx: DbOrTrx, name: string, exceptId?: number): Promise<void> {
    const holder = await repo.findRelayRowByName(trx, name);
    if (holder && Number(holder.id) !== exceptId)
      throw conflict('relay_exists', `A relay named ${name} exists already; pick another name.`);
  }

  /** TLS off with smtps:// is a contradiction (as RELAY_TLS=off is for RELAY_URL). */
  function assertTls(tls: string, secure: boolean): void {
    if (tls === 'off' && secure)
      throw badRequest('invalid_tls', 'body.tls may not be off for an smtps:// relay, which is TLS from the first byte.');
  }

  /** Which credentials a body sets: null removes, undefined leaves as they are; given twice is refused. */
  function credentialsOf(
    body: { credentials?: Credentials | null | undefined },
    fromUrl: Credentials | undefined,
  ): Credentials | null | undefined {
    if (fromUrl && body.credentials !== undefined)
      throw badRequest('invalid_credentials', 'body.credentials and a login in body.url were both given; give one.');
    return fromUrl ?? body.credentials;
  }

  async function requireRelay(trx: DbOrTrx, id: number): Promise<RelayRow> {
    const row = await repo.findRelayRow(trx, id);
    if (!row) throw notFound('relay_not_found', `No relay has id ${id}.`);
    return row;
  }

  async function describeRoutes(trx: DbOrTrx, rows: RouteRow[]): Promise<Route[]> {
    const names = new Map((await repo.listRelayRows(trx)).map((r) => [Number(r.id), r.name]));
    names.set(DEFAULT_RELAY_ID, DEFAULT_RELAY_NAME);
    return rows.map((row) => ({
      id: Number(row.id),
      position: Number(row.position),
      match: {
        application: row.api_key_id === null ? null : Number(row.api_key_id),
        senderDomain: row.sender_domain,
        recipientDomain: row.recipient_domain,
        lane: row.lane === null ? null : laneOfCode(Number(row.lane)),
      },
      relays: (JSON.parse(row.relay_ids) as number[]).map((id) => names.get(Number(id)) ?? `#${id}`),
    }));
  }

  return {
    async listRelays(): Promise<Relay[]> {
      const withCredentials = await repo.relayIdsWithCredentials(db);
      return (await repo.listRelayRows(db)).map((row) => describeRelay(row, withCredentials.has(Number(row.id))));
    },

    async getRelay(id: number): Promise<Relay> {
      return describe(db, await requireRelay(db, id));
    },

    async createRelay(body: CreateRelayBody, actor: string): Promise<Relay> {
      const name = body.name.trim();
      assertName(name, 'body.name');
      const parsed = parseRelayUrl(body.url);
      const credentials = credentialsOf(body, parsed.credentials);
      // As RELAY_TLS: required unless the relay is on this machine and no login is sent.
      const tls = body.tls ?? (credentials || !LOOPBACK.test(parsed.host) ? 'require' : 'opportunistic');
      assertTls(tls, parsed.secure);
      const relay = await db.transaction().execute(async (trx) => {
        await assertNameFree(trx, name);
        const row = await repo.insertRelay(trx, {
          name,
          url: parsed.url,
          tls,
          max_connections: body.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
          max_per_second: body.maxPerSecond ?? null,
          max_per_day: body.maxPerDay ?? null,
          created_at: clock.now(),
        });
        if (credentials) await repo.setRelayCredentials(trx, Number(row.id), credentials);
        const created = describeRelay(row, credentials !== undefined && credentials !== null);
        await insertAuditEntries(trx, [{ at: clock.now(), actor, action: 'relay.create', target: `relay:${created.id}`, after: created }]);
        return created;
      });
      directory.changed();
      return relay;
    },

    async updateRelay(id: number, body: UpdateRelayBody, actor: string): Promise<Relay> {
      const relay = await db.transaction().execute(async (trx) => {
        const row = await requireRelay(trx, id);
        const before = await describe(trx, row);
        const values: Partial<repo.RelayValues> = {};
        if (body.name !== undefined) {
          const name = body.name.trim();
          assertName(name, 'body.name');
          await assertNameFree(trx, name, id);
          values.name = name;
        }
        const parsed = parseRelayUrl(body.url ?? row.url);
        if (body.url !== undefined) values.url = parsed.url;
        const credentials = credentialsOf(body, body.url !== undefined ? parsed.credentials : undefined);
        if (body.tls !== undefined) values.tls = body.tls;
        assertTls(values.tls ?? row.tls, parsed.secure);
        if (body.maxConnections !== undefined) values.max_connections = body.maxConnections;
        if (body.maxPerSecond !== undefined) values.max_per_second = body.maxPerSecond;
        if (body.maxPerDay !== undefined) values.max_per_day = body.maxPerDay;
        const updated = (await repo.updateRelay(trx, id, { ...values, updated_at: clock.now() }))!;
        if (credentials !== undefined) await repo.setRelayCredentials(trx, id, credentials);
        const after = await describe(trx, updated);
        // The login is never in the audit log: only that it changed.
        await insertAuditEntries(trx, [
          {
            at: clock.now(),
            actor,
            action: 'relay.update',
            target: `relay:${id}`,
            before,
            after: credentials !== undefined ? { ...after, credentialsChanged: true } : after,
          },
        ]);
        return after;
      });
      directory.changed();
      return relay;
    },

    async deleteRelay(id: number, actor: string): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const row = await requireRelay(trx, id);
        const naming = (await repo.listRouteRows(trx)).filter((route) =>
          (JSON.parse(route.relay_ids) as number[]).map(Number).includes(id),
        );
        if (naming.length > 0)
          throw conflict(
            'relay_in_use',
            `Relay ${row.name} is named by route${naming.length > 1 ? 's' : ''} ${naming.map((r) => Number(r.position)).join(', ')}; change the routes first.`,
          );
        const before = await describe(trx, row);
        await repo.deleteRelay(trx, id);
        await insertAuditEntries(trx, [{ at: clock.now(), actor, action: 'relay.delete', target: `relay:${id}`, before }]);
      });
      directory.changed();
    },

    async findRelayByName(name: string): Promise<Relay | undefined> {
      const row = await repo.findRelayRowByName(db, name);
      return row ? describe(db, row) : undefined;
    },

    async listRoutes(): Promise<Route[]> {
      return describeRoutes(db, await repo.listRouteRows(db));
    },

    /** PUT: the whole ordered list, checked as a whole; 400 names the first field at fault. */
    async replaceRoutes(routes: RouteInput[], actor: string): Promise<Route[]> {
      const result = await db.transaction().execute(async (trx) => {
        const relayIds = new Map((await repo.listRelayRows(trx)).map((r) => [r.name, Number(r.id)]));
        relayIds.set(DEFAULT_RELAY_NAME, DEFAULT_RELAY_ID);
        const applicationIds = new Set((await trx.selectFrom('api_keys').select('id').execute()).map((r) => Number(r.id)));
        const now = clock.now();
        const rows = routes.map((route, position) => {
          const field = `body.routes[${position}]`;
          const ids = route.relays.map((name, i) => {
            const id = relayIds.get(name);
            if (id === undefined) throw badRequest('unknown_relay', `${field}.relays[${i}] names no relay: ${name}.`);
            return id;
          });
          if (new Set(ids).size !== ids.length) throw badRequest('duplicate_relay', `${field}.relays names a relay twice.`);
          const application = route.match.application ?? null;
          if (application !== null && !applicationIds.has(application))
            throw badRequest('unknown_application', `${field}.match.application names no application: ${application}.`);
          return {
            position,
            api_key_id: application,
            sender_domain: normalizeDomain(route.match.senderDomain, `${field}.match.senderDomain`),
            recipient_domain: normalizeDomain(route.match.recipientDomain, `${field}.match.recipientDomain`),
            lane: route.match.lane ? LANE_CODES[route.match.lane] : null,
            relay_ids: JSON.stringify(ids),
            created_at: now,
          };
        });
        const before = await describeRoutes(trx, await repo.listRouteRows(trx));
        await repo.replaceRoutes(trx, rows);
        const after = await describeRoutes(trx, await repo.listRouteRows(trx));
        await insertAuditEntries(trx, [
          {
            at: now,
            actor,
            action: 'routes.replace',
            target: 'routes',
            before: before.map(({ id: _id, ...r }) => r),
            after: after.map(({ id: _id, ...r }) => r),
          },
        ]);
        return after;
      });
      directory.changed();
      return result;
    },
  };
}

export type RelayService = ReturnType<typeof createRelayService>;
