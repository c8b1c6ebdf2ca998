import { describe, expect, it } from 'vitest';
import { INITIAL_VIEW, listParamsOf, pagerOf, viewReducer, type PageShown, type ViewState } from './mail-view';

function walk(state: ViewState, ...cursors: string[]): ViewState {
  return cursors.reduce((current, nextCursor) => viewReducer(current, { type: 'forward', cursor: nextCursor }), state);
}

describe('viewReducer', () => {
  it('starts on page 0, newest received first, with no cursor', () => {
    expect(INITIAL_VIEW).toMatchObject({ sort: 'receivedDate', order: 'desc', pageIndex: 0, cursors: [null], fromEnd: false });
  });

  it('forward stores the cursor of the following page and moves to it', () => {
    const state = walk(INITIAL_VIEW, 'c1', 'c2');
    expect(state.pageIndex).toBe(2);
    expect(state.cursors).toEqual([null, 'c1', 'c2']);
  });

  it('back takes the prevCursor of the page shown; page 0 always loads without a cursor', () => {
    const onPage2 = walk(INITIAL_VIEW, 'c1', 'c2');
    const onPage1 = viewReducer(onPage2, { type: 'back', cursor: 'p1' });
    expect(onPage1).toMatchObject({ pageIndex: 1, cursors: [null, 'p1'] });
    const onPage0 = viewReducer(onPage1, { type: 'back', cursor: 'p0' });
    expect(onPage0).toMatchObject({ pageIndex: 0, cursors: [null] });
  });

  it('back without a prevCursor reuses the cursor that loaded that page', () => {
    const state = viewReducer(walk(INITIAL_VIEW, 'c1', 'c2'), { type: 'back', cursor: null });
    expect(state).toMatchObject({ pageIndex: 1, cursors: [null, 'c1'] });
  });

  it('back on page 0 and first on page 0 change nothing (same object: no re-render)', () => {
    expect(viewReducer(INITIAL_VIEW, { type: 'back', cursor: 'x' })).toBe(INITIAL_VIEW);
    expect(viewReducer(INITIAL_VIEW, { type: 'first' })).toBe(INITIAL_VIEW);
  });

  it('first returns to page 0 and forgets the cursors', () => {
    expect(viewReducer(walk(INITIAL_VIEW, 'c1', 'c2'), { type: 'first' })).toMatchObject({ pageIndex: 0, cursors: [null] });
  });

  it('forward after going back drops the cursors beyond the page shown', () => {
    const back = viewReducer(walk(INITIAL_VIEW, 'c1', 'c2', 'c3'), { type: 'back', cursor: 'p2' });
    expect(viewReducer(back, { type: 'forward', cursor: 'n3' }).cursors).toEqual([null, 'c1', 'p2', 'n3']);
  });

  it('a new sort starts on page 0 with its first order: dates newest first, text and status A→Z', () => {
    const deep = walk(INITIAL_VIEW, 'c1');
    expect(viewReducer(deep, { type: 'sort', sort: 'subject' })).toMatchObject({
      sort: 'subject',
      order: 'asc',
      pageIndex: 0,
      cursors: [null],
    });
    expect(viewReducer(deep, { type: 'sort', sort: 'status' }).order).toBe('asc');
    expect(viewReducer(deep, { type: 'sort', sort: 'from' }).order).toBe('asc');
    expect(viewReducer(deep, { type: 'sort', sort: 'lastUpdate' }).order).toBe('desc');
  });

  it('sorting by the same column again flips the order and returns to page 0', () => {
    const flipped = viewReducer(walk(INITIAL_VIEW, 'c1'), { type: 'sort', sort: 'receivedDate' });
    expect(flipped).toMatchObject({ sort: 'receivedDate', order: 'asc', pageIndex: 0, cursors: [null] });
    expect(viewReducer(flipped, { type: 'sort', sort: 'receivedDate' }).order).toBe('desc');
  });
});

describe('viewReducer: filters and the last page', () => {
  it('any filter change returns to page 1 and keeps the sort', () => {
    const sorted = viewReducer(INITIAL_VIEW, { type: 'sort', sort: 'subject' });
    const deep = walk(sorted, 'c1', 'c2');
    for (const filters of [{ statuses: [4] }, { q: 'example.com' }, { receivedFrom: '2026-11-01' }, { receivedTo: '2026-11-02' }]) {
      const next = viewReducer(deep, { type: 'filter', filters });
      expect(next).toMatchObject({ sort: 'subject', order: 'asc', pageIndex: 0, cursors: [null], fromEnd: false });
      expect(next.filters).toMatchObject(filters);
    }
  });

  it("last reads the server's lastCursor in the same order, with the remainder as its size", () => {
    const last = viewReducer(walk(INITIAL_VIEW, 'c1'), { type: 'last', total: 12_345, cursor: 'end' });
    expect(last).toMatchObject({ fromEnd: true, pageIndex: 0, cursors: ['end'], lastPageSize: 45 });
    expect(listParamsOf(last)).toMatchObject({ sort: 'receivedDate', order: 'desc', cursor: 'end', limit: 45 });
    expect(viewReducer(INITIAL_VIEW, { type: 'last', total: 100, cursor: 'end' }).lastPageSize).toBe(50);
  });

  it('from the last page, forward steps towards the start with full pages; back returns to lastCursor; first to the start', () => {
    const last = viewReducer(INITIAL_VIEW, { type: 'last', total: 120, cursor: 'end' });
    const before = viewReducer(last, { type: 'forward', cursor: 'r1' });
    expect(listParamsOf(before)).toMatchObject({ order: 'desc', cursor: 'r1', limit: 50 });
    const again = viewReducer(before, { type: 'back', cursor: 'x' });
    expect(again).toMatchObject({ pageIndex: 0, fromEnd: true, cursors: ['end'] });
    expect(listParamsOf(again)).toMatchObject({ cursor: 'end', limit: 20 });
    expect(viewReducer(before, { type: 'first' })).toMatchObject({ pageIndex: 0, fromEnd: false, cursors: [null] });
  });

  it('the date range covers whole local days, as ISO instants', () => {
    const params = listParamsOf(
      viewReducer(INITIAL_VIEW, { type: 'filter', filters: { receivedFrom: '2026-11-01', receivedTo: '2026-11-01' } }),
    );
    expect(params.receivedFrom).toBe(new Date(2026, 10, 1).toISOString());
    expect(params.receivedTo).toBe(new Date(2026, 10, 2).toISOString());
  });
});

/** A full page shown as the view's own answer, with the meta of a middle page. */
function shown(over: Partial<PageShown> = {}): PageShown {
  return { rowCount: 50, total: 120, totalIsLowerBound: false, nextCursor: 'n', prevCursor: 'p', lastCursor: 'l', ready: true, ...over };
}

describe('pagerOf: the range and the pager buttons', () => {
  it('from the start: rows 1–50, Next and Last, no Previous', () => {
    expect(pagerOf(INITIAL_VIEW, shown())).toEqual({ firstRow: 1, lastRow: 50, canPrevious: false, canNext: true, canLast: true });
  });

  it('the third page of 120 shows 101–120 and is the end: Previous only', () => {
    const page3 = walk(INITIAL_VIEW, 'c1', 'c2');
    expect(pagerOf(page3, shown({ rowCount: 20, nextCursor: null }))).toEqual({
      firstRow: 101,
      lastRow: 120,
      canPrevious: true,
      canNext: false,
      canLast: false,
    });
  });

  it('while the next page loads (the previous one kept on screen), neither Next nor Last acts on its cursor', () => {
    const pager = pagerOf(INITIAL_VIEW, shown({ ready: false }));
    expect(pager).toMatchObject({ canNext: false, canLast: false });
  });

  it('a lower-bound total offers Next but not Last', () => {
    expect(pagerOf(INITIAL_VIEW, shown({ total: 1_000, totalIsLowerBound: true }))).toMatchObject({ canNext: true, canLast: false });
  });

  it("without the server's lastCursor there is no Last", () => {
    expect(pagerOf(INITIAL_VIEW, shown({ lastCursor: null }))).toMatchObject({ canNext: true, canLast: false });
  });

  it('no rows: the range is empty (first row 1, last row 0) and nothing but First/Previous from a deep page', () => {
    expect(pagerOf(INITIAL_VIEW, shown({ rowCount: 0, total: 0, nextCursor: null }))).toEqual({
      firstRow: 1,
      lastRow: 0,
      canPrevious: false,
      canNext: false,
      canLast: false,
    });
  });

  it('counted from the end: the last page holds the remainder, the page before it the 50 rows before', () => {
    const last = viewReducer(INITIAL_VIEW, { type: 'last', total: 120, cursor: 'L' });
    expect(pagerOf(last, shown({ rowCount: 20 }))).toEqual({
      firstRow: 101,
      lastRow: 120,
      canPrevious: true,
      canNext: false,
      canLast: false,
    });
    const before = viewReducer(last, { type: 'forward', cursor: 'r1' });
    expect(pagerOf(before, shown())).toEqual({ firstRow: 51, lastRow: 100, canPrevious: true, canNext: true, canLast: true });
    const first = viewReducer(before, { type: 'forward', cursor: 'r2' });
    expect(pagerOf(first, shown({ nextCursor: null }))).toMatchObject({ firstRow: 1, lastRow: 50, canPrevious: false, canNext: true });
  });

  it('counted from the end, the first row never goes below 1 (mails deleted since)', () => {
    const before = viewReducer(viewReducer(INITIAL_VIEW, { type: 'last', total: 120, cursor: 'L' }), { type: 'forward', cursor: 'r1' });
    expect(pagerOf(before, shown({ total: 60 })).firstRow).toBe(1);
  });
});

describe('viewReducer: Next and Previous', () => {
  it('from the start, Next stores the page’s nextCursor and Previous takes its prevCursor', () => {
    const page1 = viewReducer(INITIAL_VIEW, { type: 'next', page: shown({ nextCursor: 'c1' }) });
    expect(page1).toMatchObject({ pageIndex: 1, cursors: [null, 'c1'] });
    const page2 = viewReducer(page1, { type: 'next', page: shown({ nextCursor: 'c2' }) });
    expect(viewReducer(page2, { type: 'previous', page: shown({ prevCursor: 'p1' }) })).toMatchObject({
      pageIndex: 1,
      cursors: [null, 'p1'],
    });
  });

  it('Previous while the page is not the view’s own answer reuses the cursor that loaded the page before', () => {
    const page2 = walk(INITIAL_VIEW, 'c1', 'c2');
    expect(viewReducer(page2, { type: 'previous', page: shown({ prevCursor: 'stale', ready: false }) })).toMatchObject({
      pageIndex: 1,
      cursors: [null, 'c1'],
    });
  });

  it('Next without a nextCursor changes nothing (same object)', () => {
    expect(viewReducer(INITIAL_VIEW, { type: 'next', page: shown({ nextCursor: null }) })).toBe(INITIAL_VIEW);
  });

  it("counted from the end (same order, from the server's lastCursor), Previous steps towards the start with prevCursor and Next back towards the last page", () => {
    const last = viewReducer(INITIAL_VIEW, { type: 'last', total: 120, cursor: 'L' });
    expect(last).toMatchObject({ fromEnd: true, pageIndex: 0, cursors: ['L'], lastPageSize: 20 });
    const before = viewReducer(last, { type: 'previous', page: shown({ rowCount: 20, prevCursor: 'r1' }) });
    expect(before).toMatchObject({ fromEnd: true, pageIndex: 1, cursors: ['L', 'r1'] });
    expect(viewReducer(last, { type: 'previous', page: shown({ prevCursor: null }) })).toBe(last);
    expect(viewReducer(before, { type: 'next', page: shown({ nextCursor: 'x' }) })).toMatchObject({
      fromEnd: true,
      pageIndex: 0,
      cursors: ['L'],
    });
  });
});
