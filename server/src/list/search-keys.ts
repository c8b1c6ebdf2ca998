/**
 * Which part of a search the trigram indexes look up (docs/query-plans.md): on SQLite the trigrams its FTS5 query
 * ANDs (`chooseTrigrams`), on PostgreSQL the pieces of its `LIKE` (`chooseIndexKeys`, `chooseIndexKey`) or its
 * punctuation keys (`choosePunctuationKeys`). Pure: how common a piece is comes from the search sample
 * (search-sample.ts).
 */
import { punctuationKeysOf } from '../store/punctuation-keys.js';
import type { SampleShares } from './search-sample.js';

/** Trigrams of a search ANDed in the FTS5 query: at most this many when their frequencies are known. */
const MAX_CHOSEN_TRIGRAMS = 3;
/**
 * A trigram on more than this share of the mails narrows the candidates too little to pay for its doclist.
 * At 1M mails a second trigram on 10 % cost a count 0.2–0.6 ms more; left out, the candidates it would have
 * removed cost a page that reads them all 40–70 ms (`lia.user`: 46,000 candidates through one trigram, 7,800
 * through two). Near the bound, the sample (2,000 mails) decides either way.
 */
const NARROWING_SHARE = 0.1;
/** A word of a search on more than this share of the mails is left out of PostgreSQL's index key. */
const COMMON_WORD_SHARE = 0.05;
/** Without frequencies: every third trigram and the last, at most this many. */
const MAX_SPREAD_TRIGRAMS = 12;

/** Every 3-character piece of a text, in order, repeats included (characters, not UTF-16 units). */
export function trigramsOf(text: string): string[] {
  const chars = Array.from(text);
  return Array.from({ length: Math.max(chars.length - 2, 0) }, (_, start) => chars[start]! + chars[start + 1]! + chars[start + 2]!);
}

/**
 * The trigrams of a search (3+ characters) that the FTS5 query ANDs (SQLite). Any non-empty subset of the
 * search's trigrams finds a superset of its matches, which the `LIKE` that follows removes, so the choice is
 * about cost alone: FTS5 reads the whole doclist of every trigram it ANDs, and a common one (`exa`, `ple`,
 * `.co` of every address) is most of the index. With `share` (the share of mails holding a trigram, from a
 * sample; search-sample.ts) the rarest is taken, then the next rarest while they hold at most 10 % of the
 * mails, three at most: a full address cost 33–40 ms of FTS5 at 1M mails through every third trigram, and
 * 0.5–1 ms through its three rarest. Without it, every third trigram and the last.
 */
export function chooseTrigrams(search: string, share?: (trigram: string) => number): string[] {
  const chars = Array.from(search);
  if (chars.length < 3) return [];
  const at = (start: number) => chars.slice(start, start + 3).join('');
  if (!share) {
    const starts = new Set<number>();
    for (let start = 0; start + 3 <= chars.length; start += 3) starts.add(start);
    starts.add(chars.length - 3);
    return [...new Set([...starts].slice(0, MAX_SPREAD_TRIGRAMS).map(at))];
  }
  const trigrams = [...new Set(trigramsOf(search))];
  const byShare = trigrams.map((trigram, position) => ({ trigram, position, share: share(trigram) }));
  // Stable: among equally rare trigrams, the earlier one.
  byShare.sort((a, b) => a.share - b.share || a.position - b.position);
  const chosen = [byShare[0]!];
  for (const next of byShare.slice(1, MAX_CHOSEN_TRIGRAMS)) if (next.share <= NARROWING_SHARE) chosen.push(next);
  return chosen.map((c) => c.trigram);
}

/** A piece of a search that `pg_trgm` looks up as exactly one trigram: three ASCII letters or digits (which others count as letters depends on the database's locale). */
const PG_TRIGRAM = /^[a-z0-9]{3}$/;
/** A further trigram is added only when it at least halves the sampled mails the chosen ones are on. */
const NARROWING_FACTOR = 0.5;
/** A search on at most this share of the mails is read through the GIN index whatever else the filter holds. */
const RARE_SEARCH_SHARE = 0.005;
/**
 * A search on more, up to MAX_KEYED_SHARE, is keyed only beside statuses holding at most STATUS_SHARE of the
 * mails, which PostgreSQL ANDs with it as bitmaps. Alone, or beside most statuses, its own plan reads the
 * table until it has a page; a key hides the search from the planner's statistics (it is checked as
 * `(search_text || '') like`, guessed at 0.5 %), and the plan reads a whole posting list instead (`lumi`, on
 * 10 % of the mails: a count of 1,001 through `lum` 58–78 ms, the table read in order 9 ms; at 1M mails).
 */
const MAX_KEYED_SHARE = 0.08;
const STATUS_SHARE = 0.2;
/**
 * A search on at least this share of the mails, beside statuses holding at most STATUS_SHARE of them, is kept
 * from the index altogether (no key; checked on the rows the statuses' B-tree finds): its trigrams' posting
 * lists hold most of the index, and since the index holds the statuses too (migration 018) PostgreSQL read
 * them beside the status (`.examp`, on every mail, with Error: 12 ms before 018, 41 with it, 22 kept from
 * it; at 1M). Alone, or beside most statuses, it stays visible to the planner, whose statistics then say
 * that reading the table in order finds a page at once (hidden, the planner guesses it rare: 8 → 42 ms).
 */
const UNINDEXED_SHARE = 0.5;

/**
 * PostgreSQL: the pieces of a search that its trigram index looks up, or undefined for the whole search.
 * The GIN index reads the whole posting list of every trigram of its `LIKE` pattern and ANDs them: a word
 * of 8 letters is 6 lists, `andersen` on 5 % of the mails ~300,000 entries, 16–22 ms at 1M mails. Its rarest
 * trigram alone (`rse`) finds the same 50,727 mails in 8 ms; a full address's rarest two (`n12`, `bjo` of
 * `bjorn.andersen12@shop.example`) find it in 7 ms where its words took 24. So the key is the search's
 * rarest trigram (per the sample), then the next rarest while one at least halves the sampled mails the
 * chosen ones are on, three at most. They are taken when the sample says they find at most twice the
 * search's mails (none, for a search the sample never saw: `757` of `#57573` is on a thousand mails the
 * search is not), and the search is rare, or beside few statuses (above). Otherwise (`lav.v`: `lav` on 4.5 %
 * of the mails, the search on 0.17 %) the key is chosen by words (chooseIndexKey), whose padded trigrams
 * (`av `, ` v`) narrow more. `statusShare`: the share of the mails in the filter's statuses (1 without).
 * No key at all (an empty list) for a search on half the mails or more beside few statuses.
 */
export function chooseIndexKeys(search: string, shares: SampleShares, statusShare = 1): string[] | undefined {
  const whole = shares.text(search);
  if (whole >= UNINDEXED_SHARE && statusShare <= STATUS_SHARE) return [];
  if (whole > MAX_KEYED_SHARE || (whole > RARE_SEARCH_SHARE && statusShare > STATUS_SHARE)) return chooseWordKey(search, shares);
  const pieces = [...new Set(trigramsOf(search))]
    .filter((piece) => PG_TRIGRAM.test(piece))
    .map((piece, position) => ({ piece, position, share: shares.trigram(piece) }))
    // Stable: among equally rare trigrams, the earlier one.
    .sort((a, b) => a.share - b.share || a.position - b.position);
  if (pieces.length === 0) return chooseWordKey(search, shares);
  const chosen = [pieces[0]!.piece];
  let together = pieces[0]!.share;
  for (const next of pieces.slice(1)) {
    if (chosen.length === MAX_CHOSEN_TRIGRAMS || together === 0) break;
    const narrower = shares.together([...chosen, next.piece]);
    if (narrower <= together * NARROWING_FACTOR) {
      chosen.push(next.piece);
      together = narrower;
    }
  }
  if (together > 2 * whole) return chooseWordKey(search, shares);
  return chosen.length === 1 && chosen[0] === search ? undefined : chosen;
}

/**
 * PostgreSQL: whether the plan `sort` looks the search up before reading rows (ListOptions' `lookUpFirstShare`):
 * when the sample puts it on at most `maxShare` of the mails, or before the first sample is read; never at 0.
 */
export function isLookedUpFirst(search: string, shares: SampleShares | undefined, maxShare: number): boolean {
  if (maxShare <= 0) return false;
  return shares === undefined || shares.text(search) <= maxShare;
}

/**
 * A search with punctuation is looked up through its punctuation keys (punctuationKeysOf) when the rarest of
 * them is on at most this share of the sampled mails, and on at most twice the search's own share. At 1M
 * mails `7/2`, `clav!`, `lav.v`, `n.jensen` and `12@shop` each have a key on exactly their own mails (593 to
 * 6,966), where `pg_trgm` sees only their words (`7` and `2`, `clav`, `n` and `jensen`) and checked up to
 * 92,000 rows (82–227 ms). A search whose key is on many more mails than itself keeps its words, which are
 * then the rarer part: `cher19@` (561 mails) has the key `19@` (13,894), and its word `cher19` is looked up
 * well already. A common one (`.example`, on every mail) too.
 */
const PUNCTUATION_KEY_SHARE = 0.02;
const PUNCTUATION_KEY_SPREAD = 2;

/**
 * PostgreSQL: the punctuation keys that look `search` up in `mail_search.keys`, or undefined when its words
 * do it better (no key of three characters, or none rare enough by the sample).
 */
export function choosePunctuationKeys(search: string, shares: SampleShares): string[] | undefined {
  const keys = punctuationKeysOf(search);
  if (keys.length === 0) return undefined;
  const rarest = Math.min(...keys.map(({ raw }) => shares.text(raw)));
  if (rarest > PUNCTUATION_KEY_SHARE || rarest > PUNCTUATION_KEY_SPREAD * shares.text(search)) return undefined;
  return keys.map(({ key }) => key);
}

function chooseWordKey(search: string, shares: SampleShares): string[] | undefined {
  const key = chooseIndexKey(search, shares.text);
  return key === undefined ? undefined : [key];
}

/**
 * PostgreSQL, when the search's trigrams do not single it out (chooseIndexKeys): the part of a search that
 * its trigram index looks up, or undefined for the whole. `pg_trgm`
 * makes trigrams of the pattern's words, and the GIN index reads the whole posting list of each: a full
 * address's `example`, `shop` and `com` are on most mails. `user.weber10@mail.example.net` took 136 ms at
 * 1M mails; through `weber10@` 4 ms, with the whole search checked on the 621 rows it found. The key
 * is the search without the common words (3+ characters on more than 5 % of the mails, `share` from a
 * sample) at either end, through the separator after its last word. It must hold a rare word (3+
 * characters, at most 5 %): `12@shop` through `12@` found 92,000 rows to check, the whole 27,000. Short
 * words stay (`orn.us` through `orn.`: 129 → 262 ms, more rows to check). Nothing to leave out: the whole search.
 */
export function chooseIndexKey(search: string, share: (text: string) => number): string | undefined {
  const words = [...search.matchAll(/[\p{L}\p{N}]+/gu)].map((match) => {
    const long = Array.from(match[0]).length >= 3;
    const common = long && share(match[0]) > COMMON_WORD_SHARE;
    return { start: match.index, rare: long && !common, common };
  });
  // A short word stays: its padded trigrams (` v` of `lav.v`) narrow the rows more than they cost.
  const first = words.findIndex((word) => !word.common);
  const last = words.findLastIndex((word) => !word.common);
  if (first === -1 || !words.slice(first, last + 1).some((word) => word.rare)) return undefined;
  const key = search.slice(words[first]!.start, last + 1 < words.length ? words[last + 1]!.start : search.length);
  return key.length < search.length ? key : undefined;
}
