import { describe, expect, it } from 'vitest';
import { INITIAL_PAGING, pagingReducer, type PagingState } from './use-mail-paging';

function walk(state: PagingState, ...cursors: string[]): PagingState {
  return cursors.reduce((current, nextCursor) => pagingReducer(current, { type: 'next', nextCursor }), state);
}

describe('pagingReducer', () => {
  it('starts on page 0, newest received first, with no cursor', () => {
    expect(INITIAL_PAGING).toEqual({ sort: 'receivedDate', order: 'desc', pageIndex: 0, cursors: [null] });
  });

  it('next stores the cursor of the following page and moves to it', () => {
    const state = walk(INITIAL_PAGING, 'c1', 'c2');
    expect(state.pageIndex).toBe(2);
    expect(state.cursors).toEqual([null, 'c1', 'c2']);
  });

  it('previous takes the prevCursor of the page shown; page 0 always loads without a cursor', () => {
    const onPage2 = walk(INITIAL_PAGING, 'c1', 'c2');
    const onPage1 = pagingReducer(onPage2, { type: 'previous', prevCursor: 'p1' });
    expect(onPage1).toMatchObject({ pageIndex: 1, cursors: [null, 'p1'] });
    const onPage0 = pagingReducer(onPage1, { type: 'previous', prevCursor: 'p0' });
    expect(onPage0).toMatchObject({ pageIndex: 0, cursors: [null] });
  });

  it('previous without a prevCursor reuses the cursor that loaded that page', () => {
    const state = pagingReducer(walk(INITIAL_PAGING, 'c1', 'c2'), { type: 'previous', prevCursor: null });
    expect(state).toMatchObject({ pageIndex: 1, cursors: [null, 'c1'] });
  });

  it('previous on page 0 and first on page 0 change nothing (same object: no re-render)', () => {
    expect(pagingReducer(INITIAL_PAGING, { type: 'previous', prevCursor: 'x' })).toBe(INITIAL_PAGING);
    expect(pagingReducer(INITIAL_PAGING, { type: 'first' })).toBe(INITIAL_PAGING);
  });

  it('first returns to page 0 and forgets the cursors', () => {
    expect(pagingReducer(walk(INITIAL_PAGING, 'c1', 'c2'), { type: 'first' })).toMatchObject({ pageIndex: 0, cursors: [null] });
  });

  it('next after going back drops the cursors beyond the page shown', () => {
    const back = pagingReducer(walk(INITIAL_PAGING, 'c1', 'c2', 'c3'), { type: 'previous', prevCursor: 'p2' });
    expect(pagingReducer(back, { type: 'next', nextCursor: 'n3' }).cursors).toEqual([null, 'c1', 'p2', 'n3']);
  });

  it('a new sort starts on page 0 with its first order: dates newest first, text and status A→Z', () => {
    const deep = walk(INITIAL_PAGING, 'c1');
    expect(pagingReducer(deep, { type: 'sort', sort: 'subject' })).toEqual({
      sort: 'subject',
      order: 'asc',
      pageIndex: 0,
      cursors: [null],
    });
    expect(pagingReducer(deep, { type: 'sort', sort: 'status' }).order).toBe('asc');
    expect(pagingReducer(deep, { type: 'sort', sort: 'from' }).order).toBe('asc');
    expect(pagingReducer(deep, { type: 'sort', sort: 'lastUpdate' }).order).toBe('desc');
  });

  it('sorting by the same column again flips the order and returns to page 0', () => {
    const flipped = pagingReducer(walk(INITIAL_PAGING, 'c1'), { type: 'sort', sort: 'receivedDate' });
    expect(flipped).toEqual({ sort: 'receivedDate', order: 'asc', pageIndex: 0, cursors: [null] });
    expect(pagingReducer(flipped, { type: 'sort', sort: 'receivedDate' }).order).toBe('desc');
  });
});
