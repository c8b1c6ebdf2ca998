import { QueryClient } from '@tanstack/react-query';
import { describe, expect, it } from 'vitest';
import { NO_FILTERS, INITIAL_VIEW, listParamsOf } from '../components/mail-view';
import { listParamsOfKey, mailKeys } from './list-mails';

const params = listParamsOf({ ...INITIAL_VIEW, filters: { ...NO_FILTERS, q: 'invoice', statuses: [4] } });

describe('mailKeys', () => {
  it('gives back the parameters of a list page by name', () => {
    expect(listParamsOfKey(mailKeys.list(params))).toEqual(params);
  });

  it.each([
    ['a detail', mailKeys.detail(7)],
    ['the list prefix', mailKeys.lists()],
    ['a key of another feature', [{ scope: 'audit', entity: 'list', params }]],
    ['an array key', ['mails', 'list', params]],
    ['an empty key', []],
  ])('reads no list parameters from %s', (_name, key) => {
    expect(listParamsOfKey(key)).toBeUndefined();
  });

  it('matches list pages by `lists()` and every key of the feature by `all`', () => {
    const client = new QueryClient();
    client.setQueryData(mailKeys.list(params), { data: [], meta: {} });
    client.setQueryData(mailKeys.list({ ...params, cursor: 'next' }), { data: [], meta: {} });
    client.setQueryData(mailKeys.detail(7), { id: 7 });
    client.setQueryData([{ scope: 'audit' }], []);
    const lists = client.getQueriesData({ queryKey: mailKeys.lists() });
    expect(lists.map(([key]) => listParamsOfKey(key)?.cursor)).toEqual([null, 'next']);
    expect(client.getQueriesData({ queryKey: mailKeys.details() })).toHaveLength(1);
    expect(client.getQueriesData({ queryKey: mailKeys.all })).toHaveLength(3);
  });
});
