/**
 * The list's random workload (bench/list.ts `--random`, bench/mixed.ts): a seeded generator, search terms across
 * frequency decades sampled from the store, and random page-1 queries, so that both benchmarks ask the same
 * queries for the same seed.
 */
import { MAIL_SORTS, type MailSort } from '@outbox/contract';
import { formatNumber } from './common.js';
import type { BenchOutbox } from './outbox.js';

/** The newest mail's received_at (now, in an empty store): the queries' date ranges count back from it. */
export async function newestReceivedAt(db: BenchOutbox['running']['store']['db']): Promise<number> {
  const newest = await db
    .selectFrom('mails')
    .select((eb) => eb.fn.max('received_at').as('t'))
    .executeTakeFirstOrThrow();
  return Number(newest.t ?? Date.now());
}

/** mulberry32: a small seeded generator, so that a run's queries can be asked again. */
export function seededRandom(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SAMPLE = 5_000;

/**
 * Search terms across frequency decades. A sample of 5,000 mails spread over the ids; their tokens (words and
 * whole addresses) and pieces of them (3–8 characters, as an operator types), each with the share of the sample
 * whose search text holds it, which estimates its matches in the store to within 1 in 5,000. Terms are drawn
 * decade by decade (each decade equally often), plus terms that match nothing. `count`: the mails in the store.
 */
export async function searchTerms(
  db: BenchOutbox['running']['store']['db'],
  random: () => number,
  count: number,
): Promise<Map<string, string[]>> {
  const bounds = await db
    .selectFrom('mails')
    .select((eb) => [eb.fn.min('id').as('min'), eb.fn.max('id').as('max')])
    .executeTakeFirstOrThrow();
  const [min, max] = [Number(bounds.min), Number(bounds.max)];
  const ids = Array.from({ length: SAMPLE }, () => min + Math.floor(random() * (max - min + 1)));
  const texts: string[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await db
      .selectFrom('mails')
      .select('search_text')
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
    texts.push(...rows.map((r) => r.search_text));
  }
  const candidates = new Set<string>();
  for (const text of texts.slice(0, 400)) {
    for (const token of text.split(' ').filter((t) => t.length >= 3)) {
      candidates.add(token);
      const length = 3 + Math.floor(random() * Math.min(6, token.length - 2));
      const start = Math.floor(random() * (token.length - length + 1));
      candidates.add(token.slice(start, start + length));
    }
  }
  const decades = new Map<string, string[]>();
  for (const term of candidates) {
    const held = texts.filter((t) => t.includes(term)).length;
    const matches = (held / texts.length) * count;
    const decade = held <= 1 ? `≤${formatNumber(Math.round(count / texts.length))}` : `~1e${Math.floor(Math.log10(matches))}`;
    decades.set(decade, [...(decades.get(decade) ?? []), term]);
  }
  decades.set(
    'none',
    Array.from({ length: 50 }, () => `zq${Math.floor(random() * 1e9).toString(36)}`),
  );
  return decades;
}

export interface RandomQuery {
  sort: MailSort;
  order: 'asc' | 'desc';
  statuses?: number[];
  q?: string;
  decade?: string;
  lastHours?: number;
}

export function randomQuery(random: () => number, terms: Map<string, string[]>): RandomQuery {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const query: RandomQuery = { sort: pick(MAIL_SORTS), order: random() < 0.5 ? 'asc' : 'desc' };
  if (random() < 0.5) {
    const statuses = [0, 1, 2, 3, 4, 5].filter(() => random() < 0.35);
    query.statuses = statuses.length === 0 || statuses.length === 6 ? [Math.floor(random() * 6)] : statuses;
  }
  if (random() < 0.6) {
    query.decade = pick([...terms.keys()].sort());
    query.q = pick(terms.get(query.decade)!);
  }
  if (random() < 0.3) query.lastHours = pick([1, 6, 24, 72, 168, 336]);
  return query;
}

/** The list request of a random query: page 1 of `limit` rows, the date range counted back from `newest`. */
export function listUrl(baseUrl: string, newest: number, query: RandomQuery, limit: number): string {
  const params = new URLSearchParams({ limit: String(limit), sort: query.sort, order: query.order });
  if (query.statuses) params.set('status', query.statuses.join(','));
  if (query.q) params.set('q', query.q);
  if (query.lastHours !== undefined) params.set('receivedFrom', new Date(newest - query.lastHours * 3_600_000).toISOString());
  return `${baseUrl}/api/v1/mail/list?${params}`;
}
