/**
 * Which part of a search the trigram indexes look up (search-keys.ts), at the shares of the 1M-mail benchmark
 * store: the trigrams SQLite's FTS5 query ANDs, and the key PostgreSQL's `LIKE` reads. The rows a search finds
 * through them are asserted in test/http/list-search.test.ts and search-sample.test.ts, on both engines.
 */
import { describe, expect, it } from 'vitest';
import { chooseIndexKey, chooseIndexKeys, chooseTrigrams, isLookedUpFirst } from '../../src/list/search-keys.js';

describe('chooseTrigrams: the trigrams the FTS5 query ANDs (SQLite)', () => {
  // Shares sampled from the 1M benchmark store (2,000 mails): every address holds `.ex`, `amp`, `ple`.
  const sampled = new Map(Object.entries({ n12: 0.004, 'n.a': 0.0085, '12@': 0.0135, en1: 0.017, bjo: 0.05, and: 0.115 }));
  const share = (trigram: string) => sampled.get(trigram) ?? (/ex|amp|ple|hop|sho/.test(trigram) ? 0.3 : 0.02);

  it('without a sample: every third trigram and the last, as before the sample existed', () => {
    expect(chooseTrigrams('bjorn.andersen12@shop.example')).toEqual(['bjo', 'rn.', 'and', 'ers', 'en1', '2@s', 'hop', '.ex', 'amp', 'ple']);
    expect(chooseTrigrams('clav!')).toEqual(['cla', 'av!']);
  });

  it('with a sample: the rarest three of a full address, none of its common ones', () => {
    expect(chooseTrigrams('bjorn.andersen12@shop.example', share)).toEqual(['n12', 'n.a', '12@']);
  });

  it('a second or third trigram only while it holds at most 10 % of the mails', () => {
    expect(chooseTrigrams('example', () => 0.9)).toEqual(['exa']);
    expect(chooseTrigrams('bjorn', share)).toEqual(['jor', 'orn', 'bjo']);
    expect(chooseTrigrams('shop', () => 0.3)).toEqual(['sho']);
    const lia = new Map([
      ['ia.', 0.044],
      ['a.u', 0.044],
      ['lia', 0.099],
      ['.us', 0.18],
    ]);
    expect(chooseTrigrams('lia.us', (t) => lia.get(t) ?? 1)).toEqual(['ia.', 'a.u', 'lia']);
    expect(chooseTrigrams('lia.us', (t) => (t === 'lia' ? 0.11 : (lia.get(t) ?? 1)))).toEqual(['ia.', 'a.u']);
  });

  it('equally rare trigrams: the earlier first; a trigram twice in the search counts once', () => {
    expect(chooseTrigrams('abcabc', () => 0)).toEqual(['abc', 'bca', 'cab']);
  });

  it('fewer than three characters: nothing to look up', () => {
    expect(chooseTrigrams('ab', share)).toEqual([]);
    expect(chooseTrigrams('ab')).toEqual([]);
  });
});

describe('chooseIndexKey: the part of a search the trigram index looks up (PostgreSQL)', () => {
  // Shares of a 1M benchmark store's sample: every address holds example, most shop, mail or com.
  const common = new Set(['example', 'shop', 'mail', 'com', 'net', 'org', 'corp', 'user']);
  const share = (text: string) => (common.has(text) ? 0.4 : 0.01);

  it('a full address: from its first to its last rare word, through the separator after it', () => {
    expect(chooseIndexKey('user.weber10@mail.example.net', share)).toBe('weber10@');
    expect(chooseIndexKey('dmitri.weber1@shop.example', share)).toBe('dmitri.weber1@');
    expect(chooseIndexKey('bjorn.andersen12@shop.example', share)).toBe('bjorn.andersen12@');
  });

  it('nothing to leave out, a short word at the end, or no rare word of 3+ characters: the whole search', () => {
    expect(chooseIndexKey('weber10', share)).toBeUndefined();
    expect(chooseIndexKey('lav.v', share)).toBeUndefined();
    expect(chooseIndexKey('orn.us', share)).toBeUndefined();
    expect(chooseIndexKey('weber10@mail', share)).toBe('weber10@');
    expect(chooseIndexKey('user.ab@mail', share)).toBeUndefined();
    expect(chooseIndexKey('12@shop', share)).toBeUndefined();
    expect(chooseIndexKey('shop.example', share)).toBeUndefined();
    expect(chooseIndexKey('7/2', share)).toBeUndefined();
  });

  it('letters beyond ASCII are word characters', () => {
    expect(chooseIndexKey('søren.ødegård@example.com', share)).toBe('søren.ødegård@');
  });
});

describe('chooseIndexKeys: the trigrams PostgreSQL looks a search up by', () => {
  // A sample of 2,000 mails shaped like the benchmark store's: a surname on 5 % of them, a word on 10 %.
  const texts = Array.from({ length: 2_000 }, (_, i) => {
    const name = i % 20 === 0 ? `bjorn.andersen${i % 1_000}` : i % 10 === 1 ? `lumi.weber${i % 100}` : `user.weber${i % 1_000}`;
    return `${name}@shop.example order #${1_000 + (i % 1_000)} parcel ${(i * 37) % 10_000} shipped`;
  });
  const holding = (parts: readonly string[]) => texts.filter((t) => parts.every((part) => t.includes(part))).length / texts.length;
  const shares = { trigram: (t: string) => holding([t]), text: (t: string) => holding([t]), together: holding };

  it('a surname beside a rare status: its rarest trigram, which finds the same mails', () => {
    expect(holding(['andersen'])).toBe(0.05);
    expect(chooseIndexKeys('andersen', shares, 0.06)).toEqual(['and']);
    expect(holding(['and'])).toBe(holding(['andersen']));
  });

  it('the same surname alone, or beside most statuses: looked up whole, as PostgreSQL plans it', () => {
    expect(chooseIndexKeys('andersen', shares, 1)).toBeUndefined();
    expect(chooseIndexKeys('andersen', shares, 0.5)).toBeUndefined();
    // On 10 %: whole, beside any status.
    expect(chooseIndexKeys('lumi', shares, 0.06)).toBeUndefined();
  });

  it('a full address: its rarest trigram, then the next that halves what it finds, until none is left', () => {
    // `n20` is on andersen20 alone (two mails of the sample); `r13` on weber13, 113, 213 … and `r13` with `1 `
    // would narrow it, but `1 ` is not three letters or digits: then `113`... the rarest that halve it.
    expect(chooseIndexKeys('bjorn.andersen20@shop.example', shares)).toEqual(['n20']);
    const weber = chooseIndexKeys('user.weber313@shop.example', shares)!;
    expect(weber.length).toBeGreaterThan(0);
    expect(holding(weber)).toBeLessThanOrEqual(2 * holding(['user.weber313@shop.example']));
  });

  it('trigrams are kept only when they find at most twice the mails the search is on; never seen: none', () => {
    // `757` alone is on parcel numbers too; with `175`, on little more than `#1757`.
    expect(holding(['757'])).toBeGreaterThan(2 * holding(['#1757']));
    const keys = chooseIndexKeys('#1757', shares, 0.06)!;
    expect(keys).toEqual(['757', '175']);
    expect(holding(keys)).toBeLessThanOrEqual(2 * holding(['#1757']));
    // Never seen by the sample: trigrams the sample never saw together (three at most).
    const unseen = chooseIndexKeys('#57573', shares)!;
    expect(unseen).toEqual(['575', '757', '573']);
    expect(holding(unseen)).toBe(0);
  });

  it('a search on half the mails or more: not looked up beside few statuses, looked up whole otherwise', () => {
    expect(holding(['shop.example'])).toBe(1);
    expect(chooseIndexKeys('shop.example', shares, 0.04)).toEqual([]);
    expect(chooseIndexKeys('shop.example', shares, 0.5)).toBeUndefined();
    expect(chooseIndexKeys('shipped', shares)).toBeUndefined();
  });

  it('no piece of three letters or digits (`7/2`): the words', () => {
    expect(chooseIndexKeys('7/2', shares)).toBeUndefined();
  });
});

describe('isLookedUpFirst: whether the plan sort reads the ids of a search before its rows (PostgreSQL)', () => {
  const onShare = (share: number) => ({ trigram: () => share, text: () => share, together: () => share });

  it('a search on at most the share is looked up first; a commoner one is checked on the rows', () => {
    expect(isLookedUpFirst('kowalski7', onShare(0.006), 0.02)).toBe(true);
    expect(isLookedUpFirst('welcome', onShare(0.066), 0.02)).toBe(false);
    expect(isLookedUpFirst('ample', onShare(1), 0.02)).toBe(false);
  });

  it('before the first sample is read it is looked up first; at a share of 0, never; at 1, always', () => {
    expect(isLookedUpFirst('ample', undefined, 0.02)).toBe(true);
    expect(isLookedUpFirst('kowalski7', onShare(0), 0)).toBe(false);
    expect(isLookedUpFirst('ample', undefined, 0)).toBe(false);
    expect(isLookedUpFirst('ample', onShare(1), 1)).toBe(true);
  });
});
