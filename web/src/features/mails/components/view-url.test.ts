import { describe, expect, it } from 'vitest';
import { INITIAL_VIEW, viewReducer } from './mail-view';
import { readViewFromUrl, viewQueryOf } from './view-url';

describe('the view in the URL', () => {
  it('the default view leaves the address bare', () => {
    expect(viewQueryOf(INITIAL_VIEW)).toBe('');
    expect(readViewFromUrl('')).toEqual(INITIAL_VIEW);
  });

  it('round-trips filters, sort and page', () => {
    let view = viewReducer(INITIAL_VIEW, { type: 'filter', filters: { statuses: [4, 0], q: 'example.com', receivedFrom: '2026-11-01' } });
    view = viewReducer(view, { type: 'sort', sort: 'to' });
    view = viewReducer(view, { type: 'forward', cursor: 'abc' });
    const query = viewQueryOf(view);
    expect(query).toBe('?status=0%2C4&q=example.com&receivedFrom=2026-11-01&sort=to&order=asc&page=2&cursor=abc');
    expect(readViewFromUrl(query)).toEqual({ ...view, filters: { ...view.filters, statuses: [0, 4] }, cursors: [null, 'abc'] });
  });

  it('round-trips the last page', () => {
    const view = viewReducer(INITIAL_VIEW, { type: 'last', total: 130, cursor: 'end' });
    expect(viewQueryOf(view)).toBe('?cursor=end&end=1&size=30');
    expect(readViewFromUrl(viewQueryOf(view))).toEqual(view);
    // Without its cursor an address of the end is the first page.
    expect(readViewFromUrl('?end=1&size=30')).toEqual(INITIAL_VIEW);
  });

  it("round-trips the application, its id only (the chip's name stays out of the address)", () => {
    const view = viewReducer(INITIAL_VIEW, { type: 'filter', filters: { statuses: [4], application: '12', applicationName: 'shop' } });
    expect(viewQueryOf(view)).toBe('?status=4&application=12');
    expect(readViewFromUrl(viewQueryOf(view))).toEqual({ ...view, filters: { ...view.filters, applicationName: null } });
    expect(readViewFromUrl('?application=none').filters.application).toBe('none');
  });

  it('ignores what it does not know or cannot read', () => {
    expect(readViewFromUrl('?view=list&status=9,x&sort=nope&receivedFrom=yesterday&page=3&size=999')).toEqual(INITIAL_VIEW);
    expect(readViewFromUrl('?application=shop')).toEqual(INITIAL_VIEW);
    expect(readViewFromUrl('?application=0')).toEqual(INITIAL_VIEW);
  });
});
