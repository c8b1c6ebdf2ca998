/**
 * PostgreSQL: what lets its trigram index look up a search with punctuation (docs/query-plans.md).
 *
 * `pg_trgm` makes trigrams of the alphanumeric words of a text only: `7/2` is looked up as the words `7` and
 * `2`, which are on 92,000 of 1M mails, each then read and checked for the 593 that hold `7/2` (100–380 ms
 * for such searches at 1M mails, the slowest of the list's random workload). SQLite's FTS5 trigrams keep
 * punctuation and need none of this.
 *
 * So each mail also gets its punctuation windows (`mail_search.keys`, migrations 019 and 031, written once with the
 * mail; a status change does not touch it): every run of ASCII punctuation in its search text with up to two
 * characters on either side that are neither white space nor punctuation, the punctuation spelled in letters
 * (`.` → `qn`, `@` → `qv`, `/` → `qo`), the windows joined by spaces. `user.weber10@mail.example.net` gives
 * `erqnwe 10qvma ilqnex leqnne`, and `7/2` the window `7qo2`, trigrams `7qo` and `qo2`, which only mails
 * holding `7/2` (or rare look-alikes) have.
 *
 * A search's keys are its own punctuation runs spelled the same way, with the neighbours it has: each one is
 * inside a window of every mail the search is in. A neighbour of the search is one of the mail's too, and the
 * mail's window takes as many as the search has or more; a run bordered in the search by a neighbour on one
 * side is bordered the same way in the mail, so it ends where the mail's run ends on that side; a run at the
 * search's edge, or beside a space, may be part of a longer run in the mail, and a spelling being two
 * characters per mark, the spelling of a part is a part of the spelling (`test/store/punctuation-keys.test.ts`
 * checks this over every substring of generated texts). A key may also be inside windows of mails the search
 * is not in (`q` beside spelled punctuation); the whole search is checked on every row the keys find.
 */

/** ASCII punctuation: what `pg_trgm` treats as a word break in every locale, and what is spelled in letters. */
const PUNCTUATION = `!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`;
const SPELLING_LETTERS = 'abcdefghijklmnopqrstuvwxyz012345';
const SPELLING = new Map([...PUNCTUATION].map((mark, i) => [mark, `q${SPELLING_LETTERS[i]!}`]));
/** PUNCTUATION as a character class (its four ranges of ASCII), for the run and its neighbours' end. */
const PUNCTUATION_CLASS = '!-/:-@[-`{-~';
const RUN = new RegExp(`[${PUNCTUATION_CLASS}]+`, 'g');

function spell(run: string): string {
  let spelled = '';
  for (const mark of run) spelled += SPELLING.get(mark)!;
  return spelled;
}

/** Characters that end a run's neighbours: white space, and the punctuation of another run. */
const NOT_NEIGHBOUR = new RegExp(`[\\s${PUNCTUATION_CLASS}]`);
/** Neighbours kept on either side of a run: two make `r6@ne` of `r6@news`, where one made the common `6@n`. */
const NEIGHBOURS = 2;

/** Each punctuation run of `text`, with up to NEIGHBOURS characters on either side that are neither space nor punctuation. */
function* runsOf(text: string): Generator<{ before: string; run: string; after: string }> {
  for (const match of text.matchAll(RUN)) {
    const start = match.index;
    const end = start + match[0].length;
    let from = start;
    while (from > 0 && start - from < NEIGHBOURS && !NOT_NEIGHBOUR.test(text[from - 1]!)) from--;
    let to = end;
    while (to < text.length && to - end < NEIGHBOURS && !NOT_NEIGHBOUR.test(text[to]!)) to++;
    yield { before: text.slice(from, start), run: match[0], after: text.slice(end, to) };
  }
}

/** The `keys` column of `mail_search` (migration 031) for a mail's search text (mail/mail.repository.ts `searchTextOf`). */
export function punctuationWindowsOf(searchText: string): string {
  const windows: string[] = [];
  for (const { before, run, after } of runsOf(searchText)) windows.push(before + spell(run) + after);
  return windows.join(' ');
}

/**
 * The keys of a (lower-cased) search: each of its punctuation runs spelled, with its neighbours within the
 * search, and the text each stands for (for the search sample's share). Only keys of three characters or
 * more, which hold a trigram; none for a search without punctuation.
 */
export function punctuationKeysOf(search: string): Array<{ key: string; raw: string }> {
  const keys: Array<{ key: string; raw: string }> = [];
  for (const { before, run, after } of runsOf(search)) {
    const key = before + spell(run) + after;
    if (key.length >= 3) keys.push({ key, raw: before + run + after });
  }
  return keys;
}
