/**
 * The Overview (docs/console.md §10.21) against MSW: each range asks GET /api/v1/stats for its from/to/bucket;
 * "View as table" shows the numbers of the answer; the applications table sorts by its headers (aria-sort);
 * choosing an application opens the mails list filtered to it (application= in the list call and the address),
 * with a chip that clears it. The canvas is uPlot's (drawn in Chromium by e2e/specs/overview.spec.ts); jsdom
 * has no canvas, so the chart here is a stand-in that shows what it was given.
 */
import type { Application, Statistics, StatisticsBucket } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { createTestQueryClient, handleLogin, logIn, renderApp } from '../../../test/app-harness';
import { buildAlertRule, buildMail, buildMailList } from '../../../test/factories';
import { server } from '../../../test/server';
import { createLiveStatisticsRefresh } from '../api/overview-api';
import { OverviewPanel } from './overview-panel';
import type { TimeChartProps } from './time-chart';

vi.mock('./time-chart', () => ({
  TimeChart: ({ label, series }: TimeChartProps) => (
    <div role="img" aria-label={label} data-series={series.map((s) => s.label).join('|')} />
  ),
}));

/** 2026-11-25 10:30 UTC. */
const NOW = Date.parse('2026-11-25T10:30:00.000Z');
const HOUR = 3_600_000;

function bucket(start: number, overrides: Partial<StatisticsBucket> = {}): StatisticsBucket {
  return {
    start: new Date(start).toISOString(),
    accepted: 0,
    sent: 0,
    deferred: 0,
    failed: 0,
    bounced: 0,
    complained: 0,
    suppressed: 0,
    dequeued: 0,
    latency: { count: 0, p50Ms: null, p95Ms: null },
    rates: { bounce: null, complaint: null, failure: null },
    ...overrides,
  };
}

function statistics(from: string, to: string, bucketSize: 'hour' | 'day', special: Partial<StatisticsBucket> = {}): Statistics {
  const step = bucketSize === 'hour' ? HOUR : 24 * HOUR;
  const starts: number[] = [];
  for (let t = Date.parse(from); t < Date.parse(to); t += step) starts.push(t);
  const buckets = starts.map((t, i) => bucket(t, i === starts.length - 1 ? special : {}));
  const totals = { ...bucket(0, special), latencyHistogram: [] } as unknown as Statistics['totals'];
  return { from, to, bucket: bucketSize, application: null, buckets, totals };
}

function application(id: number, name: string, lastUsedAt: string | null): Application {
  return {
    id,
    name,
    createdAt: '2026-11-20T10:00:00.000Z',
    createdBy: 'operator:kim',
    lastUsedAt,
    revokedAt: null,
    previousKeyExpiresAt: null,
    mailsLast24h: 0,
    mailsLast24hIsLowerBound: false,
    lane: 'transactional',
    contentRetentionDays: null,
  };
}

const APPLICATIONS = [
  application(1, 'shop', '2026-11-25T09:00:00.000Z'),
  application(2, 'billing', '2026-11-24T09:00:00.000Z'),
  application(3, 'alerts', null),
];
/** Per application: sent, failed, bounced, complained over the range. */
const PER_APPLICATION: Record<string, [number, number, number, number]> = {
  '1': [200, 10, 4, 1],
  '2': [50, 25, 0, 0],
  '3': [0, 0, 0, 0],
};

/** Serves the Overview's calls; returns the statistics queries asked (all applications together, and each one's). */
function serveOverview() {
  const asked: URLSearchParams[] = [];
  const perApplicationCalls: URLSearchParams[] = [];
  server.use(
    http.get('/api/v1/stats', ({ request }) => {
      const query = new URL(request.url).searchParams;
      asked.push(query);
      const from = query.get('from')!;
      const to = query.get('to')!;
      const size = query.get('bucket') as 'hour' | 'day';
      const id = query.get('application');
      if (id === null)
        return HttpResponse.json({
          data: [
            statistics(from, to, size, {
              accepted: 1234,
              sent: 1100,
              deferred: 7,
              failed: 20,
              bounced: 33,
              complained: 2,
              latency: { count: 1100, p50Ms: 850, p95Ms: 4200 },
              rates: { bounce: 0.0318, complaint: 0.0018, failure: 0.0179 },
            }),
          ],
        });
      const [sent, failed, bounced, complained] = PER_APPLICATION[id]!;
      const rates = {
        failure: failed + sent === 0 ? null : failed / (failed + sent),
        bounce: sent === 0 ? null : (bounced + complained) / sent,
        complaint: sent === 0 ? null : complained / sent,
      };
      return HttpResponse.json({ data: [statistics(from, to, 'day', { sent, failed, bounced, complained, rates })] });
    }),
    http.get('/api/v1/stats/applications', ({ request }) => {
      const query = new URL(request.url).searchParams;
      perApplicationCalls.push(query);
      const from = query.get('from')!;
      const to = query.get('to')!;
      return HttpResponse.json({
        data: Object.entries(PER_APPLICATION).map(([id, [sent, failed, bounced, complained]]) => ({
          application: { id: Number(id), name: APPLICATIONS.find((a) => a.id === Number(id))?.name ?? null },
          totals: statistics(from, to, 'day', {
            sent,
            failed,
            bounced,
            complained,
            rates: {
              failure: failed + sent === 0 ? null : failed / (failed + sent),
              bounce: sent === 0 ? null : (bounced + complained) / sent,
              complaint: sent === 0 ? null : complained / sent,
            },
          }).totals,
        })),
        meta: { from, to },
      });
    }),
    http.get('/api/v1/applications', () => HttpResponse.json({ data: APPLICATIONS })),
    http.get('/api/v1/alerts', () =>
      HttpResponse.json({
        data: [
          buildAlertRule({ summary: '', lastEvaluatedAt: null }),
          buildAlertRule({ rule: 'bounce_rate', title: 'Bounce rate', threshold: 0.05, summary: '', lastEvaluatedAt: null }),
        ],
        meta: { at: '2026-11-25T10:30:00.000Z', firing: 0, evaluationIntervalSeconds: 30, history: [] },
      }),
    ),
  );
  return { asked, perApplicationCalls, overall: () => asked.filter((q) => !q.has('application')) };
}

function renderPanel(onOpenApplication = vi.fn()) {
  const user = userEvent.setup();
  const queryClient = createTestQueryClient();
  render(
    <QueryClientProvider client={queryClient}>
      <OverviewPanel token="t" onClose={() => {}} onOpenApplication={onOpenApplication} now={() => NOW} />
    </QueryClientProvider>,
  );
  return { user, onOpenApplication };
}

const span = (q: URLSearchParams) => Date.parse(q.get('to')!) - Date.parse(q.get('from')!);

describe('Overview ranges', () => {
  it('asks for the last 24 hours by the hour when it opens, then 7 d by the hour and 30 d by the day', async () => {
    const { overall } = serveOverview();
    const { user } = renderPanel();
    await screen.findByText(/1,234 accepted, 1,100 sent/);
    // A screen reader hears the chosen range once it loaded, not the figures at each live refresh.
    expect(screen.getByText('Over 24 hours (hourly) shown')).toHaveAttribute('aria-live', 'polite');
    expect(screen.getByText(/1,234 accepted, 1,100 sent/)).not.toHaveAttribute('aria-live');
    expect(overall()[0]!.get('bucket')).toBe('hour');
    // Up to the end of the current hour: 24 whole hours with the one filling now.
    expect(overall()[0]!.get('to')).toBe('2026-11-25T11:00:00.000Z');
    expect(span(overall()[0]!)).toBe(24 * HOUR);
    expect(screen.getByRole('button', { name: '24 h' })).toHaveAttribute('aria-pressed', 'true');

    await user.click(screen.getByRole('button', { name: '7 d' }));
    await waitFor(() => expect(overall()).toHaveLength(2));
    expect(overall()[1]!.get('bucket')).toBe('hour');
    expect(span(overall()[1]!)).toBe(7 * 24 * HOUR);

    await user.click(screen.getByRole('button', { name: '30 d' }));
    await waitFor(() => expect(overall()).toHaveLength(3));
    expect(overall()[2]!.get('bucket')).toBe('day');
    expect(overall()[2]!.get('to')).toBe('2026-11-26T00:00:00.000Z');
    expect(span(overall()[2]!)).toBe(30 * 24 * HOUR);
  });

  it('asks for custom local days, by the hour up to 7 days and by the day beyond; a reversed range is refused', async () => {
    const { overall } = serveOverview();
    const { user } = renderPanel();
    await screen.findByText(/1,100 sent/);
    await user.click(screen.getByRole('button', { name: 'Custom' }));
    const from = screen.getByLabelText('From');
    const to = screen.getByLabelText('to');
    await user.clear(from);
    await user.type(from, '2026-11-01');
    await user.clear(to);
    await user.type(to, '2026-11-20');
    await waitFor(() => expect(overall().at(-1)!.get('from')).toBe(new Date(2026, 10, 1).toISOString()));
    const last = overall().at(-1)!;
    expect(last.get('to')).toBe(new Date(2026, 10, 21).toISOString());
    expect(last.get('bucket')).toBe('day');

    await user.clear(from);
    await user.type(from, '2026-11-18');
    await waitFor(() => expect(overall().at(-1)!.get('from')).toBe(new Date(2026, 10, 18).toISOString()));
    expect(overall().at(-1)!.get('bucket')).toBe('hour');

    // Refresh asks for the same range again.
    const asked = overall().length;
    await user.click(screen.getByRole('button', { name: 'Refresh' }));
    await waitFor(() => expect(overall()).toHaveLength(asked + 1));
    expect(overall().at(-1)!.get('from')).toBe(new Date(2026, 10, 18).toISOString());

    await user.clear(from);
    await user.type(from, '2026-11-22');
    expect(await screen.findByRole('alert')).toHaveTextContent('The last day is before the first.');
  });
});

describe('Overview charts and tables', () => {
  it('draws each chart with its series, and View as table shows its numbers', async () => {
    serveOverview();
    const { user } = renderPanel();
    const volume = await screen.findByRole('region', { name: 'Sending volume by outcome' });
    expect(within(volume).getByRole('img', { name: /Sending volume by outcome chart/ })).toHaveAttribute(
      'data-series',
      'Sent|Deferred|Failed|Bounced|Complained|Suppressed|Dequeued|Accepted',
    );
    const rates = screen.getByRole('region', { name: 'Bounce and complaint rates' });
    // The bounce_rate rule's threshold from GET /api/v1/alerts, drawn as a line.
    await waitFor(() =>
      expect(within(rates).getByRole('img')).toHaveAttribute('data-series', 'Bounce rate|Complaint rate|Alert threshold 5%'),
    );

    await user.click(within(volume).getByRole('button', { name: 'View as table' }));
    expect(within(volume).getByRole('button', { name: 'View as table' })).toHaveAttribute('aria-pressed', 'true');
    expect(within(volume).queryByRole('img')).toBeNull();
    const table = within(volume).getByRole('table', { name: 'Sending volume by outcome' });
    const headers = within(table)
      .getAllByRole('columnheader')
      .map((h) => h.textContent);
    expect(headers).toEqual(['Hour', 'Sent', 'Deferred', 'Failed', 'Bounced', 'Complained', 'Suppressed', 'Dequeued', 'Accepted']);
    const rows = within(table).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(24);
    expect(
      within(rows.at(-1)!)
        .getAllByRole('cell')
        .map((c) => c.textContent),
    ).toEqual(['1,100', '7', '20', '33', '2', '0', '0', '1,234']);

    const latency = screen.getByRole('region', { name: 'Delivery latency' });
    await user.click(within(latency).getByRole('button', { name: 'View as table' }));
    const last = within(within(latency).getByRole('table')).getAllByRole('row').at(-1)!;
    expect(
      within(last)
        .getAllByRole('cell')
        .map((c) => c.textContent),
    ).toEqual(['850 ms', '4.2 s']);

    await user.click(within(rates).getByRole('button', { name: 'View as table' }));
    const rateRow = within(within(rates).getByRole('table')).getAllByRole('row').at(-1)!;
    // The threshold is said in the description, not repeated on every row.
    expect(
      within(rateRow)
        .getAllByRole('cell')
        .map((c) => c.textContent),
    ).toEqual(['3.2%', '0.2%']);
    expect(rates).toHaveTextContent("the bounce_rate alert's threshold, 5%");
  });

  it('sorts the applications by each header, aria-sort saying how', async () => {
    const { perApplicationCalls } = serveOverview();
    const { user } = renderPanel();
    const table = await screen.findByRole('table', { name: /Applications over the range/ });
    const names = () =>
      within(table)
        .getAllByRole('rowheader')
        .map((h) => within(h).getByRole('button').textContent);
    await waitFor(() => expect(within(table).getAllByRole('row')[1]).toHaveTextContent('200'));
    // Every application's figures in one call, for the range shown.
    expect(perApplicationCalls).toHaveLength(1);
    expect(perApplicationCalls[0]!.get('to')).toBe('2026-11-25T11:00:00.000Z');
    // Most sent first by default.
    expect(names()).toEqual(['shop', 'billing', 'alerts']);
    const header = (name: string) => within(table).getByRole('columnheader', { name });
    expect(header('Sent')).toHaveAttribute('aria-sort', 'descending');
    expect(within(table).getAllByRole('row')[1]).toHaveTextContent('shop2004.8%2.5%0.5%');

    await user.click(within(header('Failure %')).getByRole('button'));
    expect(header('Failure %')).toHaveAttribute('aria-sort', 'descending');
    expect(header('Sent')).toHaveAttribute('aria-sort', 'none');
    // 33.3 %, 4.8 %, then alerts: nothing sent, no rate, last either way.
    expect(names()).toEqual(['billing', 'shop', 'alerts']);
    await user.click(within(header('Failure %')).getByRole('button'));
    expect(header('Failure %')).toHaveAttribute('aria-sort', 'ascending');
    expect(names()).toEqual(['shop', 'billing', 'alerts']);

    await user.click(within(header('Application')).getByRole('button'));
    expect(names()).toEqual(['alerts', 'billing', 'shop']);
    await user.click(within(header('Last used')).getByRole('button'));
    expect(names()).toEqual(['shop', 'billing', 'alerts']);
  });
});

describe('Overview → the mails list', () => {
  it('opens the list filtered to the application chosen, in the address, with a chip that clears it', async () => {
    serveOverview();
    handleLogin();
    const listCalls: URLSearchParams[] = [];
    server.use(
      http.get('/api/v1/mail/list', ({ request }) => {
        const query = new URL(request.url).searchParams;
        listCalls.push(query);
        const mails = query.get('application') === '2' ? [buildMail({ id: 77, subject: 'Invoice of billing' })] : [buildMail({ id: 1 })];
        return HttpResponse.json(buildMailList(mails));
      }),
    );
    const { user } = renderApp({ firstPageWaitMs: 0 });
    await logIn(user);
    await user.click(await screen.findByRole('button', { name: 'Overview' }));
    const dialog = await screen.findByRole('dialog', { name: 'Overview' });
    const table = await within(dialog).findByRole('table', { name: /Applications over the range/ });
    // The table is drawn before each application's figures arrive: wait for the row, as a loaded machine is slow to.
    await user.click(await within(table).findByRole('button', { name: 'billing' }, { timeout: 10_000 }));

    await waitFor(() => expect(screen.queryByRole('dialog', { name: 'Overview' })).toBeNull());
    expect(await screen.findByText('Invoice of billing')).toBeInTheDocument();
    expect(listCalls.at(-1)!.get('application')).toBe('2');
    await waitFor(() => expect(new URLSearchParams(window.location.search).get('application')).toBe('2'));
    const chip = screen.getByRole('button', { name: 'Application: billing, clear this filter' });

    await user.click(chip);
    await waitFor(() => expect(listCalls.at(-1)!.get('application')).toBeNull());
    expect(screen.queryByRole('button', { name: /Application: billing/ })).toBeNull();
    await waitFor(() => expect(new URLSearchParams(window.location.search).has('application')).toBe(false));
  });
});

describe('Overview live refresh', () => {
  it('marks the statistics stale at the first mail change, then at most once a period; the applications on their own period', async () => {
    const queryClient = createTestQueryClient();
    // Each refresh is stamped with the throttle's own clock reading, the one it ran at: a stamp taken later, in the
    // spy, would measure a loaded machine's pause between the two as well (CI once saw 37 ms at a 50 ms period).
    let lastReading = 0;
    const now = () => (lastReading = performance.now());
    const invalidated: Array<{ key: string; at: number }> = [];
    vi.spyOn(queryClient, 'invalidateQueries').mockImplementation((filters) => {
      invalidated.push({ key: String(filters?.queryKey?.[1]), at: lastReading });
      return Promise.resolve();
    });
    const of = (key: string) => invalidated.filter((entry) => entry.key === key);
    const refresh = createLiveStatisticsRefresh(queryClient, { statistics: 50, perApplication: 60_000 }, now);
    try {
      // A burst: one refresh of each, at once.
      for (let i = 0; i < 20; i++) refresh.onMailsChanged();
      await waitFor(() => expect(of('statistics')).toHaveLength(1));
      await waitFor(() => expect(of('per-application')).toHaveLength(1));
      // More changes within the period: the charts once more, when it ends; the applications wait for theirs.
      for (let i = 0; i < 20; i++) refresh.onMailsChanged();
      await waitFor(() => expect(of('statistics')).toHaveLength(2));
      expect(of('statistics')[1]!.at - of('statistics')[0]!.at).toBeGreaterThanOrEqual(49);
      expect(of('per-application')).toHaveLength(1);
    } finally {
      refresh.stop();
    }
  });
});
