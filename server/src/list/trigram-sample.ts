/**
 * How common each trigram is among the mails (SQLite), for `chooseTrigrams` (list-plan.ts): the share of a
 * random sample of mails whose `search_text` holds it. FTS5 can tell a trigram's document count only by
 * reading its doclist, which is the cost the choice avoids; 2,000 mails tell a trigram on 5 % of them from
 * one on 50 % well enough.
 *
 * The sample is read in the background, in chunks with the event loop free between them (2,000 rows and
 * their trigrams cost ~90 ms at 1M mails, too much for one request to wait). Until it is ready a search uses
 * every third trigram, as before it existed. It is read again when it is ten minutes old, or when the store
 * has grown or shrunk by a quarter since (an empty store's first mails included).
 */
import type { DbOrTrx } from '../store/connection.js';

export interface TrigramSampleOptions {
  /** Mails in a sample. */
  size: number;
  maxAgeMs: number;
  now: () => number;
}

const DEFAULTS: TrigramSampleOptions = { size: 2_000, maxAgeMs: 600_000, now: Date.now };
/** Rows read between two turns of the event loop. */
const CHUNK = 250;

export interface TrigramSample {
  /**
   * The share of mails holding a trigram (0 for one the sample never saw), or undefined while no sample is
   * read. Starts a read when there is none, or it is stale for a store of `totalRows` mails.
   */
  shareOf(totalRows: number): ((trigram: string) => number) | undefined;
  /** Resolves when the read in progress, if any, is done (tests). */
  settled(): Promise<void>;
}

export function createTrigramSample(db: DbOrTrx, options: Partial<TrigramSampleOptions> = {}): TrigramSample {
  const { size, maxAgeMs, now } = { ...DEFAULTS, ...options };
  let current: { share: (trigram: string) => number; at: number; totalRows: number } | undefined;
  let reading: Promise<void> | undefined;

  async function read(totalRows: number): Promise<void> {
    const at = now();
    const bounds = await db
      .selectFrom('mails')
      .select((eb) => [eb.fn.min('id').as('min'), eb.fn.max('id').as('max')])
      .executeTakeFirst();
    if (!bounds || bounds.min === null || bounds.max === null) return;
    const [min, max] = [Number(bounds.min), Number(bounds.max)];
    // A small store is read whole; a large one at random ids (deleted ones are simply missing).
    const ids =
      max - min + 1 <= size
        ? Array.from({ length: max - min + 1 }, (_, i) => min + i)
        : Array.from({ length: size }, () => min + Math.floor(Math.random() * (max - min + 1)));
    const holding = new Map<string, number>();
    let rows = 0;
    for (let start = 0; start < ids.length; start += CHUNK) {
      await new Promise((resolve) => setImmediate(resolve));
      const texts = await db
        .selectFrom('mails')
        .select('search_text')
        .where('id', 'in', ids.slice(start, start + CHUNK))
        .execute();
      for (const { search_text: text } of texts) {
        rows += 1;
        const chars = Array.from(text);
        const seen = new Set<string>();
        for (let i = 0; i + 3 <= chars.length; i++) seen.add(chars[i]! + chars[i + 1]! + chars[i + 2]!);
        for (const trigram of seen) holding.set(trigram, (holding.get(trigram) ?? 0) + 1);
      }
    }
    if (rows === 0) return;
    current = { share: (trigram) => (holding.get(trigram) ?? 0) / rows, at, totalRows };
  }

  return {
    shareOf(totalRows) {
      const stale = !current || now() - current.at > maxAgeMs || Math.abs(totalRows - current.totalRows) > current.totalRows / 4;
      if (stale && !reading && totalRows > 0) {
        // A failed read (the store closing, say) leaves the previous sample, or none: searches stay correct.
        reading = read(totalRows)
          .catch(() => undefined)
          .finally(() => {
            reading = undefined;
          });
      }
      return current?.share;
    },
    settled: () => reading ?? Promise.resolve(),
  };
}
