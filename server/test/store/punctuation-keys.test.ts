/**
 * store/punctuation-keys.ts: every key of a search lies inside the windows of every text that holds the search
 * (so PostgreSQL's lookup through mail_search_keys never misses a mail), checked over generated texts and
 * every substring of them with punctuation; and the spelling itself.
 */
import { describe, expect, it } from 'vitest';
import { punctuationKeysOf, punctuationWindowsOf } from '../../src/store/punctuation-keys.js';

/** A small deterministic generator (mulberry32), so a failure names a reproducible text. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = 'abqz09 ..@@//!-_%\\\'"é';

describe('punctuation keys', () => {
  it('spells each run with up to two neighbours on each side that are neither space nor punctuation; keys need three characters', () => {
    expect(punctuationWindowsOf('user.weber10@mail.example.net')).toBe('erqnwe 10qvma ilqnex leqnne');
    expect(punctuationWindowsOf('re: 7/2 offer!')).toBe('reqp 7qo2 erqa');
    expect(punctuationWindowsOf('no punctuation here')).toBe('');
    expect(punctuationKeysOf('7/2')).toEqual([{ key: '7qo2', raw: '7/2' }]);
    expect(punctuationKeysOf('clav!')).toEqual([{ key: 'avqa', raw: 'av!' }]);
    expect(punctuationKeysOf('n.j.smith')).toEqual([
      { key: 'nqnj', raw: 'n.j' },
      { key: 'jqnsm', raw: 'j.sm' },
    ]);
    // `@` alone spells to two characters: no trigram, no key. `%` and `_` are spelled, never LIKE wildcards.
    expect(punctuationKeysOf('@')).toEqual([]);
    expect(punctuationKeysOf('a%_b')).toEqual([{ key: 'aqeq0b', raw: 'a%_b' }]);
  });

  it('every key of every substring with punctuation is inside the windows of the text (3,000 generated texts)', () => {
    const random = seeded(25);
    let checked = 0;
    for (let n = 0; n < 3_000; n++) {
      const text = Array.from({ length: 4 + Math.floor(random() * 20) }, () => ALPHABET[Math.floor(random() * ALPHABET.length)]!).join('');
      const windows = punctuationWindowsOf(text);
      for (let start = 0; start < text.length; start++)
        for (let end = start + 1; end <= text.length; end++)
          for (const { key } of punctuationKeysOf(text.slice(start, end))) {
            checked++;
            if (!windows.includes(key))
              expect.fail(
                `key ${key} of ${JSON.stringify(text.slice(start, end))} is not in ${JSON.stringify(windows)} of ${JSON.stringify(text)}`,
              );
          }
    }
    expect(checked).toBeGreaterThan(100_000);
  });
});
