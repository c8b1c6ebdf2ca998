/**
 * The list planner's pure choices (list-plan.ts) at the sizes of the 1M-mail benchmark store, where the
 * 120-mail table of test/http/list-search.test.ts cannot reach: which source the count and the plan `sort`
 * read the matches from, and which plan reads the page. The rows each choice returns are asserted there, on both engines.
 */
import { describe, expect, it } from 'vitest';
import {
  chooseMatchSource,
  DEFAULT_LIST_OPTIONS,
  estimateWalkShare,
  planList,
  type ListFilter,
  type MatchStats,
} from '../../src/list/list-plan.js';

const MILLION = 1_000_000;

describe('chooseMatchSource: the source that reads fewer rows before it has the cap + 1 matches (the count)', () => {
  const cases: Array<{ name: string; filter: ListFilter; engine: 'sqlite' | 'postgres'; stats: MatchStats; source: string }> = [
    {
      // Through the trigrams ~50,000 rows (one candidate in 50 is Processing), through the status ~15,000 (×2).
      name: 'a common word with a rare status (q=shipped status=2)',
      filter: { search: 'shipped', statuses: [2] },
      engine: 'sqlite',
      stats: { statusRows: 20_000, totalRows: MILLION, candidates: 66_000 },
      source: 'seek',
    },
    {
      name: 'a word of 5,000 mails with the same status: its candidates are fewer than the status rows',
      filter: { search: 'kowalski7', statuses: [2] },
      engine: 'sqlite',
      stats: { statusRows: 20_000, totalRows: MILLION, candidates: 5_000 },
      source: 'trigrams',
    },
    {
      // ~16,700 candidates against ~15,200 status rows, weighted twice.
      name: 'a common word with a status of 6 %',
      filter: { search: 'shipped', statuses: [4] },
      engine: 'sqlite',
      stats: { statusRows: 60_000, totalRows: MILLION, candidates: 66_000 },
      source: 'trigrams',
    },
    {
      name: 'a common word with a common status: one candidate in three passes',
      filter: { search: 'shipped', statuses: [3] },
      engine: 'sqlite',
      stats: { statusRows: 330_000, totalRows: MILLION, candidates: 66_000 },
      source: 'trigrams',
    },
    {
      name: 'a word with no more candidates than the cap',
      filter: { search: 'kowalski77', statuses: [0, 4] },
      engine: 'sqlite',
      stats: { statusRows: 140_000, totalRows: MILLION, candidates: 600 },
      source: 'trigrams',
    },
    {
      name: 'statuses holding no more mails than the cap',
      filter: { search: 'shipped', statuses: [1] },
      engine: 'sqlite',
      stats: { statusRows: 900, totalRows: MILLION, candidates: 66_000 },
      source: 'seek',
    },
    {
      name: 'a search without statuses',
      filter: { search: 'shipped' },
      engine: 'sqlite',
      stats: { statusRows: MILLION, totalRows: MILLION },
      source: 'trigrams',
    },
    {
      name: 'a search of 2 characters (no trigram): the status seeked',
      filter: { search: 'sh', statuses: [2] },
      engine: 'sqlite',
      stats: { statusRows: 20_000, totalRows: MILLION },
      source: 'seek',
    },
    {
      name: 'PostgreSQL: its planner weighs the GIN and status indexes',
      filter: { search: 'shipped', statuses: [2] },
      engine: 'postgres',
      stats: { statusRows: 20_000, totalRows: MILLION },
      source: 'engine',
    },
    {
      // The seek of (status, received_at, id) reads the ~2,100 mails in both, not the 35,000 of the day.
      name: 'a common word with a status of 6 % in the last 24 hours',
      filter: { search: 'shipped', statuses: [4], receivedFrom: 1 },
      engine: 'sqlite',
      stats: { statusRows: 60_000, totalRows: MILLION, rangeRows: 35_000, candidates: 67_000 },
      source: 'seek',
    },
    {
      name: 'a common word in the last hour (1,500 mails)',
      filter: { search: 'shipped', receivedFrom: 1 },
      engine: 'sqlite',
      stats: { statusRows: MILLION, totalRows: MILLION, rangeRows: 1_500, candidates: 66_000 },
      source: 'seek',
    },
    {
      name: 'a rare word in the last week (250,000 mails)',
      filter: { search: 'kowalski77', receivedFrom: 1 },
      engine: 'sqlite',
      stats: { statusRows: MILLION, totalRows: MILLION, rangeRows: 250_000, candidates: 600 },
      source: 'trigrams',
    },
  ];
  for (const c of cases)
    it(`${c.name}: ${c.source}`, () => {
      expect(chooseMatchSource(c.filter, c.engine, c.stats, DEFAULT_LIST_OPTIONS.countCap + 1)).toBe(c.source);
    });
});

describe('chooseMatchSource: the source that reads fewer rows to get every match (the plan sort)', () => {
  const cases: Array<{ name: string; filter: ListFilter; stats: MatchStats; source: string }> = [
    {
      // 1,000,000 candidates (every mail says "example") against the 6 hours' ~9,000 mails.
      name: 'a word on every mail in the last 6 hours',
      filter: { search: 'ample', receivedFrom: 1 },
      stats: { statusRows: MILLION, totalRows: MILLION, rangeRows: 9_000, candidates: MILLION },
      source: 'seek',
    },
    {
      name: 'a word of 5,000 mails with statuses of 200,000',
      filter: { search: 'kowalski7', statuses: [0, 4, 5] },
      stats: { statusRows: 200_000, totalRows: MILLION, candidates: 5_000 },
      source: 'trigrams',
    },
    {
      name: 'a common word with a status of 60,000: its 66,000 candidates (the seek weighs 120,000)',
      filter: { search: 'shipped', statuses: [4] },
      stats: { statusRows: 60_000, totalRows: MILLION, candidates: 66_000 },
      source: 'trigrams',
    },
    {
      name: 'a common word with a status of 20,000',
      filter: { search: 'shipped', statuses: [2] },
      stats: { statusRows: 20_000, totalRows: MILLION, candidates: 66_000 },
      source: 'seek',
    },
  ];
  for (const c of cases)
    it(`${c.name}: ${c.source}`, () => {
      expect(chooseMatchSource(c.filter, 'sqlite', c.stats, Infinity)).toBe(c.source);
      expect(chooseMatchSource(c.filter, 'postgres', c.stats, Infinity)).toBe('engine');
    });
});

describe('planList', () => {
  const cases: Array<{
    name: string;
    filter: ListFilter;
    sort: 'receivedDate' | 'subject';
    matches?: number;
    expected?: number;
    candidates?: number;
    walkShare?: number;
    seekSpread?: number;
    /** Rows a page needs; 'every' for a request without limit. Default 51 (limit 50). */
    pageRows?: number | 'every';
    plan: object;
  }> = [
    { name: 'statuses alone', filter: { statuses: [1, 5] }, sort: 'subject', plan: { name: 'index' } },
    { name: 'a date range in received order', filter: { receivedFrom: 1 }, sort: 'receivedDate', plan: { name: 'index' } },
    {
      name: 'a date range sorted by subject, 5,000 mails',
      filter: { receivedFrom: 1 },
      sort: 'subject',
      matches: 1_001,
      plan: { name: 'walk', bound: 5_000, throughCandidates: false },
    },
    { name: 'a rare word', filter: { search: 'kowalski77' }, sort: 'subject', matches: 600, plan: { name: 'gather' } },
    {
      name: 'a middling word (SQLite estimate)',
      filter: { search: 'kowalski7' },
      sort: 'subject',
      matches: 1_001,
      expected: 5_700,
      plan: { name: 'walk', bound: 5_000, throughCandidates: true },
    },
    {
      name: 'a common word',
      filter: { search: 'shipped' },
      sort: 'subject',
      matches: 1_001,
      expected: 66_000,
      plan: { name: 'walk', bound: 5_000, throughCandidates: false },
    },
    // A page needs 51 / share entries; the bound lets the walk pass 5,000 (per status, to the nearest frontier).
    {
      name: 'a date range of one hour sorted by subject (0.15 % of the mails): the walk would pass ~34,000',
      filter: { receivedFrom: 1 },
      sort: 'subject',
      matches: 1_001,
      walkShare: 0.0015,
      plan: { name: 'sort' },
    },
    {
      name: 'a date range of a week sorted by subject (25 %): ~200 entries',
      filter: { receivedFrom: 1 },
      sort: 'subject',
      matches: 1_001,
      walkShare: 0.25,
      plan: { name: 'walk', bound: 5_000, throughCandidates: false },
    },
    {
      name: 'a word on 0.9 % of the mails, four statuses of which the largest holds 60 %: ~5,700 entries against ~8,300',
      filter: { search: 'ischer', statuses: [0, 1, 3, 5] },
      sort: 'subject',
      matches: 1_001,
      walkShare: 0.009,
      seekSpread: 1 / 0.6,
      plan: { name: 'walk', bound: 5_000, throughCandidates: false },
    },
    {
      name: 'the same word alone: ~5,700 entries against 5,000',
      filter: { search: 'ischer' },
      sort: 'subject',
      matches: 1_001,
      walkShare: 0.009,
      plan: { name: 'sort' },
    },
    {
      name: 'a middling word walked through its candidates: the bound counts candidates, the estimate does not apply',
      filter: { search: 'kowalski7' },
      sort: 'subject',
      matches: 1_001,
      expected: 5_700,
      walkShare: 0.0057,
      plan: { name: 'walk', bound: 5_000, throughCandidates: true },
    },
    {
      // The count found ~3,000 matches (status and word), but the word alone is on ~50,000 mails: reading its
      // candidates (15,001 ids, then thrown away) cost 7–9 ms at 1M mails before the plan weighed them.
      name: 'a word on 5 % of the mails with a status of 6 %: few matches, too many candidates to walk through',
      filter: { search: 'andersen', statuses: [4] },
      sort: 'receivedDate',
      matches: 1_001,
      expected: 3_000,
      candidates: 50_000,
      walkShare: 0.05,
      plan: { name: 'walk', bound: 5_000, throughCandidates: false },
    },
    {
      name: 'a middling word with a status: its candidates are few enough to walk through',
      filter: { search: 'kowalski7', statuses: [3] },
      sort: 'subject',
      matches: 1_001,
      expected: 4_500,
      candidates: 5_700,
      walkShare: 0.0065,
      plan: { name: 'walk', bound: 5_000, throughCandidates: true },
    },
    {
      // ~25,500 entries to pass against ~2,000 candidates to read: the candidates, sorted.
      name: 'a rarer word with few candidates: sorted, not walked through them',
      filter: { search: 'clav!' },
      sort: 'subject',
      matches: 1_001,
      expected: 2_000,
      walkShare: 0.002,
      plan: { name: 'sort' },
    },
    {
      name: 'a search on PostgreSQL (no estimate): the walk, which falls back to sort if it finds no page',
      filter: { search: 'ischer' },
      sort: 'subject',
      matches: 1_001,
      plan: { name: 'walk', bound: 5_000, throughCandidates: false },
    },
    {
      name: 'every match (no limit) of a common word: read through its index, not a bounded walk',
      filter: { search: 'shipped' },
      sort: 'subject',
      matches: 1_001,
      pageRows: 'every',
      plan: { name: 'sort' },
    },
    {
      name: 'every match of 2 characters: the walk, unbounded',
      filter: { search: 'sh' },
      sort: 'subject',
      matches: 1_001,
      pageRows: 'every',
      plan: { name: 'walk', bound: undefined, throughCandidates: false },
    },
    {
      name: 'every match of a rare word: gathered by id',
      filter: { search: 'kowalski77' },
      sort: 'subject',
      matches: 600,
      pageRows: 'every',
      plan: { name: 'gather' },
    },
    {
      name: 'a search of 2 characters',
      filter: { search: 'sh' },
      sort: 'subject',
      matches: 1_001,
      plan: { name: 'walk', bound: undefined, throughCandidates: false },
    },
  ];
  for (const c of cases)
    it(`${c.name}: ${JSON.stringify(c.plan)}`, () => {
      const pageRows = c.pageRows === 'every' ? undefined : (c.pageRows ?? 51);
      const stats = {
        matches: c.matches,
        expectedMatches: c.expected,
        candidates: c.candidates,
        walkShare: c.walkShare,
        seekSpread: c.seekSpread,
        pageRows,
      };
      expect(planList(c.filter, c.sort, stats, DEFAULT_LIST_OPTIONS)).toEqual(c.plan);
    });
});

describe('estimateWalkShare: the share of the entries a walk passes that match', () => {
  const known = { statusRows: MILLION, totalRows: MILLION };

  it('a count through the trigrams covers every term; the seek of the received order holds the range', () => {
    expect(estimateWalkShare({ search: 'shipped' }, 'subject', { ...known, matchesOfEveryTerm: 66_000 })).toBeCloseTo(0.066);
    const range = { search: 'shipped', receivedFrom: 1 };
    const counted = { ...known, rangeRows: 250_000, matchesOfEveryTerm: 16_500 };
    expect(estimateWalkShare(range, 'receivedDate', counted)).toBeCloseTo(0.066);
    expect(estimateWalkShare(range, 'subject', counted)).toBeCloseTo(0.0165);
  });

  it("SQLite's probe of the candidates, times the range's share where the walk checks it; the sample is not asked", () => {
    const unasked = () => {
      throw new Error('the sample was asked although the probe answered');
    };
    const stats = { ...known, rangeRows: 100_000, candidates: 50_000, sampledShareOf: unasked };
    expect(estimateWalkShare({ search: 'ischer', receivedFrom: 1 }, 'subject', stats)).toBeCloseTo(0.005);
    expect(
      estimateWalkShare({ search: 'shipped' }, 'subject', { ...known, matchesOfEveryTerm: 66_000, sampledShareOf: unasked }),
    ).toBeCloseTo(0.066);
  });

  it("PostgreSQL: the sample's share of the search, at least what the count found", () => {
    expect(estimateWalkShare({ search: 'lav.v' }, 'lastUpdate', { ...known, sampledShareOf: () => 0.0015 })).toBeCloseTo(0.0015);
    // On none of the 2,000 sampled mails, but the count found 1,001.
    expect(estimateWalkShare({ search: 'clav!' }, 'subject', { ...known, sampledShareOf: () => 0, counted: 1_001 })).toBeCloseTo(0.001);
    expect(estimateWalkShare({ search: 'clav!' }, 'subject', known)).toBeUndefined();
  });

  it('a range from a start without an end, by last update either way: the seek is bounded there, as if it held the range', () => {
    const stats = { ...known, rangeRows: 10_000 };
    expect(estimateWalkShare({ receivedFrom: 1 }, 'lastUpdate', stats)).toBe(1);
    expect(estimateWalkShare({ search: 'rders', receivedFrom: 1 }, 'lastUpdate', { ...stats, sampledShareOf: () => 0.02 })).toBeCloseTo(
      0.02,
    );
    // With an end, the mails received after it pass too (first when newest first): the range is checked on each.
    expect(estimateWalkShare({ receivedFrom: 1, receivedTo: 2 }, 'lastUpdate', stats)).toBeCloseTo(0.01);
    // Sorted by anything else, the range is checked on each row.
    expect(estimateWalkShare({ receivedFrom: 1 }, 'subject', stats)).toBeCloseTo(0.01);
  });
});
