/**
 * How common a piece of text is among the mails' `search_text`, from a random sample of 2,000 mails: the
 * share of them holding it. The list uses it to look up the rare part of a search in its trigram index:
 * on SQLite the rarest trigrams (`chooseTrigrams`, search-keys.ts), on PostgreSQL the rarest trigrams too, or
 * the rare words (`chooseIndexKeys`). Neither index can tell how common an entry is without reading it whole, which is the
 * cost the choice avoids; 2,000 mails tell text on 5 % of them from text on 50 % well enough.
 *
 * The sample is 20 runs of 100 consecutive mails from random ids, read in the background with the event loop
 * free between runs (2,000 rows and their trigrams cost ~90 ms at 1M mails, too much for one request to wait). Until it is ready a search
 * looks up what it did before the sample existed. It is read again when it is ten minutes old, or when the
 * store has grown or shrunk by a quarter since (an empty store's first mails included).
 */
import type { DbOrTrx } from '../store/connection.js';
import { trigramsOf } from './search-keys.js';
import { findIdRange } from './list-matches.repository.js';

export interface SearchSampleOptions {
  /** Mails in a sample. */
  size: number;
  maxAgeMs: number;
  now: () => number;
}

const DEFAULTS: SearchSampleOptions = { size: 2_000, maxAgeMs: 600_000, now: Date.now };
/** Consecutive mails read from each random id, one turn of the event loop each. */
const RUN = 100;
/** Shares of text remembered per sample (a search's words; cleared with each new sample). */
const TEXT_SHARES_KEPT = 10_000;

/** The share of sampled mails holding a trigram, or any text (0 for what the sample never saw). */
export interface SampleShares {
  trigram(trigram: string): number;
  text(text: string): number;
  /** The share holding every one of `texts` (the trigrams of a PostgreSQL index key, chooseIndexKeys). */
  together(texts: readonly string[]): number;
}

export interface SearchSample {
  /**
   * The sample's shares, or undefined while no sample is read. Starts a read when there is none, or it is
   * stale for a store of `totalRows` mails.
   */
  sharesFor(totalRows: number): SampleShares | undefined;
  /** Resolves when the read in progress, if any, is done (tests). */
  settled(): Promise<void>;
}

export function createSearchSample(db: DbOrTrx, options: Partial<SearchSampleOptions> = {}): SearchSample {
  const { size, maxAgeMs, now } = { ...DEFAULTS, ...options };
  let current: { shares: SampleShares; at: number; totalRows: number } | undefined;
  let reading: Promise<void> | undefined;

  async function read(totalRows: number): Promise<void> {
    const at = now();
    // Two seeks of the primary key (findIdRange): one query asking min(id) and max(id) together is a scan of
    // the whole table on SQLite, 70 ms at 1M mails with the event loop held.
    const bounds = await findIdRange(db);
    if (!bounds) return;
    const { min, max } = bounds;
    // Runs of consecutive mails from random ids, so ids freed by deletes cost no sample: each run is one seek
    // of the primary key and takes the next `RUN` mails that exist. A small store is read whole.
    const starts =
      max - min + 1 <= size
        ? [min]
        : Array.from({ length: Math.ceil(size / RUN) }, () => min + Math.floor(Math.random() * (max - min + 1)));
    const perRun = starts.length === 1 ? size : RUN;
    const texts: string[] = [];
    /** Trigram → the sampled texts holding it, by index, ascending. */
    const holding = new Map<string, number[]>();
    for (const start of starts) {
      await new Promise((resolve) => setImmediate(resolve));
      const run = (from: number, limit: number) =>
        db.selectFrom('mails').select('search_text').where('id', '>=', from).orderBy('id').limit(limit).execute();
      const rows = await run(start, perRun);
      // A run that reached the last mail goes on from the first.
      if (rows.length < perRun && start > min) rows.push(...(await run(min, perRun - rows.length)));
      for (const { search_text: text } of rows) {
        const index = texts.push(text) - 1;
        const seen = new Set(trigramsOf(text));
        for (const trigram of seen) {
          const holders = holding.get(trigram);
          if (holders) holders.push(index);
          else holding.set(trigram, [index]);
        }
      }
    }
    if (texts.length === 0) return;
    const textShares = new Map<string, number>();
    // The texts holding every part: only those holding each part's trigrams are looked at (a text of 1–2
    // characters has none, and every text is looked at). A request asks a few of these: at 2,000 texts,
    // filtering them all cost ~0.3 ms each, ~1–2 ms a search on PostgreSQL.
    const shareOf = (parts: readonly string[]) => {
      const key = JSON.stringify(parts);
      let share = textShares.get(key);
      if (share === undefined) {
        const lists = parts.flatMap((part) => trigramsOf(part)).map((trigram) => holding.get(trigram) ?? []);
        lists.sort((a, b) => a.length - b.length);
        const holders =
          lists.length === 0
            ? texts.map((_, index) => index)
            : lists[0]!.filter((index) => lists.every((list) => includesSorted(list, index)));
        share = holders.filter((index) => parts.every((part) => texts[index]!.includes(part))).length / texts.length;
        if (textShares.size >= TEXT_SHARES_KEPT) textShares.clear();
        textShares.set(key, share);
      }
      return share;
    };
    const shares: SampleShares = {
      trigram: (trigram) => (holding.get(trigram)?.length ?? 0) / texts.length,
      text: (text) => shareOf([text]),
      together: shareOf,
    };
    current = { shares, at, totalRows };
  }

  return {
    sharesFor(totalRows) {
      const stale = !current || now() - current.at > maxAgeMs || Math.abs(totalRows - current.totalRows) > current.totalRows / 4;
      if (stale && !reading && totalRows > 0) {
        // A failed read (the store closing, say) leaves the previous sample, or none: searches stay correct.
        reading = read(totalRows)
          .catch(() => undefined)
          .finally(() => {
            reading = undefined;
          });
      }
      return current?.shares;
    },
    settled: () => reading ?? Promise.resolve(),
  };
}

/** Whether an ascending list holds `value` (binary search). */
function includesSorted(list: readonly number[], value: number): boolean {
  let low = 0;
  let high = list.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (list[middle] === value) return true;
    if (list[middle]! < value) low = middle + 1;
    else high = middle - 1;
  }
  return false;
}
