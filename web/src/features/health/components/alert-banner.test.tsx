import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, within } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { AlertRuleStatus, AlertsResponse } from '@outbox/contract';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildAlertRule } from '../../../test/factories';
import { server } from '../../../test/server';
import { alertKeys } from '../api/get-alerts';
import { AlertBanner } from './alert-banner';

function serve(data: AlertRuleStatus[]) {
  const auth: (string | null)[] = [];
  const body: AlertsResponse = {
    data,
    meta: {
      at: '2026-11-23T10:00:00.000Z',
      firing: data.filter((r) => r.state === 'firing').length,
      evaluationIntervalSeconds: 30,
      history: [],
    },
  };
  server.use(
    http.get('/api/v1/alerts', ({ request }) => {
      auth.push(request.headers.get('authorization'));
      return HttpResponse.json(body);
    }),
  );
  return auth;
}

describe('alert banner', () => {
  it('shows each firing rule with its title, since when and its sentence, as an alert; not the others', async () => {
    const auth = serve([
      buildAlertRule({
        state: 'firing',
        since: '2026-11-23T10:02:00.000Z',
        value: 0.42,
        summary: '42% of 50 delivery attempts failed in the last 15 min (threshold 20%, at least 20 attempts)',
      }),
      buildAlertRule({ rule: 'no_worker', title: 'No worker running', state: 'pending', summary: 'No live worker while 3 mails are due' }),
    ]);
    render(
      <QueryClientProvider client={createTestQueryClient()}>
        <AlertBanner token="alerts-token" />
      </QueryClientProvider>,
    );
    const banner = await screen.findByRole('alert', { name: 'Alerts firing' });
    const items = within(banner).getAllByRole('listitem');
    expect(items).toHaveLength(1);
    expect(items[0]).toHaveTextContent('Alert: Delivery failure rate');
    expect(items[0]).toHaveTextContent('42% of 50 delivery attempts failed in the last 15 min (threshold 20%, at least 20 attempts)');
    const time = within(items[0]!).getByText(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect(time).toHaveAttribute('datetime', '2026-11-23T10:02:00.000Z');
    expect(within(banner).queryByText(/No worker running/)).toBeNull();
    expect(within(banner).queryByRole('button')).toBeNull();
    expect(auth[0]).toBe('Token alerts-token');
  });

  it('shows nothing while no rule fires, and appears when its query is refreshed (what the live event does)', async () => {
    serve([buildAlertRule({ state: 'resolved', since: '2026-11-23T09:00:00.000Z' })]);
    const client = createTestQueryClient();
    render(
      <QueryClientProvider client={client}>
        <AlertBanner token="alerts-token" />
      </QueryClientProvider>,
    );
    await expect.poll(() => client.getQueryData(alertKeys.all)).toBeDefined();
    expect(screen.queryByRole('alert')).toBeNull();
    serve([
      buildAlertRule({
        rule: 'no_worker',
        title: 'No worker running',
        state: 'firing',
        since: '2026-11-23T10:05:00.000Z',
        summary: 'No live worker while 1 mail is due',
      }),
    ]);
    await client.invalidateQueries({ queryKey: ['alerts'] });
    expect(await screen.findByRole('alert', { name: 'Alerts firing' })).toHaveTextContent('Alert: No worker running');
  });
});
