/**
 * What the worker routes by (docs/relays.md): the relays with their logins and the ordered routes, read from the
 * store and kept for REFRESH_MS, and the pure choice of a mail's relays. One per store (like the suppression check),
 * so a change made through the API of this process reaches its worker at once (`changed()`); another process's
 * change is seen within REFRESH_MS.
 */
import type { Store } from '../store/connection.js';
import { loadRoutingRows } from './relay.repository.js';

export const REFRESH_MS = 2_000;
/** The id routes give the default relay (RELAY_URL, or the capture relay). */
export const DEFAULT_RELAY_ID = 0;

export interface RelaySettings {
  id: number;
  name: string;
  url: string;
  tls: 'require' | 'opportunistic' | 'off';
  credentials: { username: string; password: string } | undefined;
  maxConnections: number;
  maxPerSecond: number | null;
  maxPerDay: number | null;
}

export interface CompiledRoute {
  id: number;
  apiKeyId: number | null;
  senderDomain: string | null;
  recipientDomain: string | null;
  lane: number | null;
  relayIds: number[];
}

export interface RoutingTable {
  relays: Map<number, RelaySettings>;
  routes: CompiledRoute[];
}

/** What a mail is routed by: its application, its lane, its envelope sender and its first envelope recipient. */
export interface RoutedMail {
  apiKeyId: number | null;
  lane: number;
  sender: string;
  recipients: readonly string[];
}

const domainOf = (address: string) => {
  const at = address.lastIndexOf('@');
  return at === -1
    ? ''
    : address
        .slice(at + 1)
        .trim()
        .toLowerCase()
        .replace(/\.$/, '');
};

/** `example.com` matches that domain; `*.example.com` any of its subdomains (not example.com itself). */
export function domainMatches(pattern: string, domain: string): boolean {
  if (domain === '') return false;
  if (pattern.startsWith('*.')) return domain.endsWith(pattern.slice(1)) && domain.length > pattern.length - 1;
  return domain === pattern;
}

/**
 * The relays of the first route that matches the mail, the primary first; undefined when none matches (the
 * default relay takes it). A mail to several domains is routed by its first envelope recipient.
 */
export function routeOf(table: RoutingTable, mail: RoutedMail): CompiledRoute | undefined {
  const sender = domainOf(mail.sender);
  const recipient = domainOf(mail.recipients[0] ?? '');
  return table.routes.find(
    (route) =>
      (route.apiKeyId === null || route.apiKeyId === mail.apiKeyId) &&
      (route.lane === null || route.lane === mail.lane) &&
      (route.senderDomain === null || domainMatches(route.senderDomain, sender)) &&
      (route.recipientDomain === null || domainMatches(route.recipientDomain, recipient)),
  );
}

export interface RoutingDirectory {
  /** The table, read again when older than REFRESH_MS or changed in this process. */
  current(): Promise<RoutingTable>;
  /** Call after a change of relays or routes: the next `current()` reads the store. */
  changed(): void;
}

const directories = new WeakMap<Store, RoutingDirectory>();

export function routingDirectoryFor(store: Store): RoutingDirectory {
  let directory = directories.get(store);
  if (!directory) {
    directory = createRoutingDirectory(store);
    directories.set(store, directory);
  }
  return directory;
}

async function readRoutingTable(store: Store): Promise<RoutingTable> {
  const rows = await loadRoutingRows(store.db);
  const relays = new Map<number, RelaySettings>();
  for (const row of rows.relays) {
    relays.set(Number(row.id), {
      id: Number(row.id),
      name: row.name,
      url: row.url,
      tls: row.tls as RelaySettings['tls'],
      credentials: row.username !== null && row.password !== null ? { username: row.username, password: row.password } : undefined,
      maxConnections: Number(row.max_connections),
      maxPerSecond: row.max_per_second === null ? null : Number(row.max_per_second),
      maxPerDay: row.max_per_day === null ? null : Number(row.max_per_day),
    });
  }
  const routes = rows.routes.map((row) => ({
    id: Number(row.id),
    apiKeyId: row.api_key_id === null ? null : Number(row.api_key_id),
    senderDomain: row.sender_domain,
    recipientDomain: row.recipient_domain,
    lane: row.lane === null ? null : Number(row.lane),
    relayIds: (JSON.parse(row.relay_ids) as number[]).map(Number),
  }));
  return { relays, routes };
}

function createRoutingDirectory(store: Store): RoutingDirectory {
  let table: RoutingTable | undefined;
  let readAt = 0;
  let generation = 0;
  let reading: Promise<RoutingTable> | undefined;
  let readingGeneration = -1;
  return {
    async current() {
      // Real time, not the app's clock: this is a cache's age, and tests move their clock by days.
      if (table && Date.now() - readAt < REFRESH_MS) return table;
      if (!reading || readingGeneration !== generation) {
        const started = generation;
        readingGeneration = started;
        reading = readRoutingTable(store)
          .then((read) => {
            // A change made while this read was under way is read again next time.
            if (started === generation) {
              table = read;
              readAt = Date.now();
            }
            return read;
          })
          .catch((error: unknown) => {
            // The store did not answer: the last table read still routes, else the caller fails its send.
            if (table) return table;
            throw error;
          })
          .finally(() => {
            if (readingGeneration === started) reading = undefined;
          });
      }
      return reading;
    },
    changed() {
      generation += 1;
      readAt = 0;
    },
  };
}
