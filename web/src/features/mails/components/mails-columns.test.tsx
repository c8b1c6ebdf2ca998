import { render } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import { buildMail } from '../../../test/factories';
import { LIST_SORTS } from '../api/list-mails';
import { DATA_COLUMN_IDS, MAIL_COLUMNS, columnOf, columnOrderOf, dataColumnOf, type RowCellProps } from './mails-columns';
import { gridTemplateOf } from './use-table-layout';

const row: RowCellProps = { selected: false, pending: false, onToggleSelected: vi.fn(), onDequeue: vi.fn(), onDelete: vi.fn() };

describe('the column model', () => {
  it('declares each column once, the fixed selection column first and the action column last', () => {
    const ids = MAIL_COLUMNS.map((column) => column.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(['select', ...DATA_COLUMN_IDS, 'actions']);
    expect(DATA_COLUMN_IDS).toEqual(['from', 'to', 'subject', 'status', 'providerSentDate', 'receivedDate', 'lastUpdate']);
  });

  it('sorts each data column by a sort the list call knows, and no two columns by the same one', () => {
    const sortKeys = DATA_COLUMN_IDS.map((id) => dataColumnOf(id)?.sortKey);
    for (const key of sortKeys) expect(LIST_SORTS).toContain(key);
    expect(new Set(sortKeys).size).toBe(sortKeys.length);
  });

  it('keeps the fixed columns in place around the operator’s order of the data columns', () => {
    const order = ['lastUpdate', 'from', 'to', 'subject', 'status', 'providerSentDate', 'receivedDate'];
    expect(columnOrderOf(order)).toEqual(['select', ...order, 'actions']);
  });

  it('gives the grid template fixed widths for the fixed columns and a growing share for the data columns', () => {
    expect(
      gridTemplateOf([
        { id: 'select', size: 0 },
        { id: 'subject', size: 200 },
        { id: 'actions', size: 0 },
      ]),
    ).toBe('40px minmax(200px, 360fr) 70px');
  });

  it('draws a cell and its tooltip from the mail alone: the date in local time, its UTC instant as title', () => {
    const mail = buildMail({ receivedDate: '2026-11-26T10:00:00.000Z', subject: 'Quarterly invoice' });
    const received = columnOf('receivedDate');
    expect(received?.title?.(mail)).toBe('2026-11-26T10:00:00.000Z');
    const { container } = render(<>{received?.cell(mail, row)}</>);
    expect(container.querySelector('time')?.getAttribute('dateTime')).toBe(received?.title?.(mail));
    expect(columnOf('subject')?.title?.(mail)).toBe('Quarterly invoice');
  });

  it('has no column for an unknown id (a layout stored by another version)', () => {
    expect(columnOf('id')).toBeUndefined();
    expect(dataColumnOf('actions')).toBeUndefined();
  });
});
