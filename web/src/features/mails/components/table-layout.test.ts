import { afterEach, describe, expect, it, vi } from 'vitest';
import { DATA_COLUMN_IDS } from './mails-columns';
import { LAYOUT_STORAGE_KEY, MAX_COLUMN_SIZE, MIN_COLUMN_SIZE, defaultLayout, loadLayout, moveColumn, saveLayout } from './table-layout';

function store(value: string): void {
  window.localStorage.setItem(LAYOUT_STORAGE_KEY, value);
}

afterEach(() => window.localStorage.clear());

describe('loadLayout', () => {
  it('gives the default layout when nothing is stored', () => {
    expect(loadLayout()).toEqual({ order: [...DATA_COLUMN_IDS], sizing: {} });
  });

  it('reads back what saveLayout wrote', () => {
    const layout = { order: moveColumn(DATA_COLUMN_IDS, 'subject', 'from'), sizing: { to: 240 } };
    saveLayout(layout);
    expect(loadLayout()).toEqual(layout);
  });

  it.each([
    ['not JSON', '{"order": ['],
    ['JSON null', 'null'],
    ['a number', '42'],
    ['a string', '"from,to"'],
    ['an array', '["from"]'],
  ])('falls back to the defaults on malformed storage (%s)', (_name, raw) => {
    store(raw);
    expect(loadLayout()).toEqual(defaultLayout());
  });

  it('keeps only known columns and finite sizes, clamped, from a half-broken value', () => {
    store(
      JSON.stringify({ order: ['to', 42, 'to', 'nope', null], sizing: { from: 'wide', to: 5, subject: 99999, nope: 200, status: NaN } }),
    );
    const layout = loadLayout();
    expect(layout.order).toEqual(['to', ...DATA_COLUMN_IDS.filter((id) => id !== 'to')]);
    expect(layout.sizing).toEqual({ to: MIN_COLUMN_SIZE, subject: MAX_COLUMN_SIZE });
  });

  it('reads a layout saved by an older version: a removed column is dropped, a new column is appended', () => {
    // An older console had an "id" column and no LastUpdate column; sizes were fractional.
    store(
      JSON.stringify({ order: ['id', 'subject', 'from', 'to', 'status', 'providerSentDate', 'receivedDate'], sizing: { subject: 210.6 } }),
    );
    expect(loadLayout()).toEqual({
      order: ['subject', 'from', 'to', 'status', 'providerSentDate', 'receivedDate', 'lastUpdate'],
      sizing: { subject: 211 },
    });
  });

  it('gives the defaults when storage cannot be read (disabled by the browser)', () => {
    vi.spyOn(Storage.prototype, 'getItem').mockImplementation(() => {
      throw new DOMException('denied', 'SecurityError');
    });
    expect(loadLayout()).toEqual(defaultLayout());
  });

  it('saveLayout survives a full or disabled storage', () => {
    vi.spyOn(Storage.prototype, 'setItem').mockImplementation(() => {
      throw new DOMException('full', 'QuotaExceededError');
    });
    expect(() => saveLayout(defaultLayout())).not.toThrow();
  });
});

describe('moveColumn', () => {
  const order = ['from', 'to', 'subject', 'status'] as const;
  const cast = (ids: readonly string[]) => ids as never;

  it('moves a column right, to the place of the target', () => {
    expect(moveColumn(cast(order), 'from', 'subject')).toEqual(['to', 'subject', 'from', 'status']);
  });

  it('moves a column left, to the place of the target', () => {
    expect(moveColumn(cast(order), 'status', 'to')).toEqual(['from', 'status', 'to', 'subject']);
  });

  it('swaps neighbours', () => {
    expect(moveColumn(cast(order), 'to', 'from')).toEqual(['to', 'from', 'subject', 'status']);
  });

  it('returns an equal copy for an unknown column, an unknown target or a move onto itself', () => {
    for (const [moved, target] of [
      ['actions', 'from'],
      ['from', 'actions'],
      ['to', 'to'],
    ] as const) {
      const result = moveColumn(cast(order), moved, target);
      expect(result).toEqual([...order]);
      expect(result).not.toBe(order);
    }
  });
});
