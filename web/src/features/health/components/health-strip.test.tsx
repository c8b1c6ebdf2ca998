import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, within } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { QueueHealth } from '@outbox/contract';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildQueueHealth } from '../../../test/factories';
import { server } from '../../../test/server';
import { formatAge, formatRate } from './health-text';
import { HealthStrip } from './health-strip';

function serve(health: QueueHealth) {
  const auth: (string | null)[] = [];
  server.use(
    http.get('/api/v1/queue/health', ({ request }) => {
      auth.push(request.headers.get('authorization'));
      return HttpResponse.json({ data: [health] });
    }),
  );
  return auth;
}

function renderStrip() {
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <HealthStrip token="health-token" />
    </QueryClientProvider>,
  );
  return screen.getByRole('region', { name: 'Queue health' });
}

describe('queue health strip', () => {
  it('shows due now, oldest Queued, in flight, delivered, failures and an active worker', async () => {
    const auth = serve(
      buildQueueHealth({
        queued: 1500,
        dueNow: 1234,
        oldestQueuedAgeSeconds: 3 * 3600 + 5 * 60,
        oldestQueuedAt: '2026-11-23T10:05:00.000Z',
        inFlight: 12,
        deliveredLastMinute: 90,
        deliveredLastHour: 5400,
        failedLastHour: 60,
        failureRateLastHour: 60 / 5460,
        workerActiveLastMinute: true,
      }),
    );
    const strip = renderStrip();
    expect(await within(strip).findByText('Worker active')).toBeInTheDocument();
    const figure = (label: string) => within(strip).getByText(label).closest('div');
    expect(figure('Due now')).toHaveTextContent('1,234');
    expect(figure('Oldest Queued')).toHaveTextContent('3 h 5 min');
    expect(figure('In flight')).toHaveTextContent('12');
    expect(figure('Delivered 1 min')).toHaveTextContent('90');
    expect(figure('Delivered 1 h')).toHaveTextContent('5,400');
    expect(figure('Failed 1 h')).toHaveTextContent('60 (1.1 %)');
    expect(within(strip).queryByRole('alert')).toBeNull();
    expect(auth[0]).toBe('Token health-token');
  });

  it('says "No worker running" loudly when due mails wait and no worker was active in the last minute', async () => {
    serve(buildQueueHealth({ queued: 7, dueNow: 7, workerActiveLastMinute: false }));
    const strip = renderStrip();
    expect(await within(strip).findByRole('alert')).toHaveTextContent('No worker running: 7 due mails wait');
  });

  it('an idle worker on an empty queue is not an alarm', async () => {
    serve(buildQueueHealth());
    const strip = renderStrip();
    expect(await within(strip).findByText('Worker idle')).toBeInTheDocument();
    expect(within(strip).queryByRole('alert')).toBeNull();
  });

  it('formats ages and rates', () => {
    expect([formatAge(null), formatAge(59), formatAge(600), formatAge(90_000)]).toEqual(['—', '59 s', '10 min', '1 d 1 h']);
    expect([formatRate(null), formatRate(0), formatRate(0.5)]).toEqual(['—', '0 %', '50 %']);
  });
});
