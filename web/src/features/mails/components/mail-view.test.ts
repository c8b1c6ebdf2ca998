import { describe, expect, it } from 'vitest';
import { INITIAL_VIEW, listParamsOf, viewReducer, type ViewState } from './mail-view';

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
