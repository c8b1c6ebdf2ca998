import type { LiveMail } from '@outbox/contract';
import { describe, expect, it } from 'vitest';
import { buildMail, buildMailList } from '../../../test/factories';
import type { MailListParams } from '../api/list-mails';
import { applyCounts, applyMailChanges, matchesView } from './live-cache';

const params = (overrides: Partial<MailListParams> = {}): MailListParams => ({
  sort: 'receivedDate',
  order: 'desc',
  cursor: null,
  limit: 50,
  statuses: [],
  q: '',
  receivedFrom: null,
  receivedTo: null,
  application: null,
  ...overrides,
});
const live = (overrides: Partial<LiveMail>): LiveMail => ({
  id: 1,
  status: 3,
  lastUpdate: '2026-11-23T14:00:00.000Z',
  providerSentDate: '2026-11-23T14:00:00.000Z',
  receivedDate: '2026-11-23T13:00:00.000Z',
  isNew: false,
  ...overrides,
});

describe('live cache updates', () => {
  it('changes rows in place (status, dates), keeps deleted and unknown ones, and keeps the same object when nothing changed', () => {
    const list = buildMailList([buildMail({ id: 1, status: 2, providerSentDate: null }), buildMail({ id: 2, status: 0 })]);
    const next = applyMailChanges(
      list,
      new Map([
        [1, live({ id: 1 })],
        [2, live({ id: 2, status: null })],
        [9, live({ id: 9 })],
      ]),
    );
    expect(next.data.map((m) => [m.id, m.status, m.providerSentDate])).toEqual([
      [1, 3, '2026-11-23T14:00:00.000Z'],
      [2, 0, list.data[1]!.providerSentDate],
    ]);
    expect(applyMailChanges(next, new Map([[1, live({ id: 1 })]]))).toBe(next);
  });

  it('counts: the chips always; the total only where it is the sum of the counters', () => {
    const list = buildMailList([buildMail()], { total: 7, counts: { '0': 1 } });
    const counts = { '0': 5, '1': 0, '2': 1, '3': 10, '4': 2, '5': 3 };
    expect(applyCounts(list, params(), counts).meta.total).toBe(21);
    expect(applyCounts(list, params({ statuses: [4, 5] }), counts).meta).toMatchObject({ total: 5, counts });
    expect(applyCounts(list, params({ q: 'shop' }), counts).meta.total).toBe(7);
    expect(applyCounts(list, params({ receivedFrom: '2026-11-01T00:00:00.000Z' }), counts).meta.total).toBe(7);
    expect(applyCounts(buildMailList([buildMail()], { total: 7, counts: {} }), params(), counts).meta.total).toBe(7);
  });

  it('a new mail enters the view when its status and received date fit the filter', () => {
    expect(matchesView(params(), live({ status: 0 }))).toBe(true);
    expect(matchesView(params({ statuses: [4, 5] }), live({ status: 0 }))).toBe(false);
    expect(matchesView(params({ statuses: [0] }), live({ status: 0 }))).toBe(true);
    expect(matchesView(params({ receivedTo: '2026-11-23T13:00:00.000Z' }), live({}))).toBe(false);
    expect(matchesView(params({ receivedFrom: '2026-11-23T13:00:00.000Z' }), live({}))).toBe(true);
    expect(matchesView(params(), live({ status: null }))).toBe(false);
  });
});
