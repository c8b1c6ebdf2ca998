import { QueryClientProvider } from '@tanstack/react-query';
import { cleanup, render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import type { QueueHealth } from '@outbox/contract';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildQueueHealth } from '../../../test/factories';
import { server } from '../../../test/server';
import { HEALTH_POLL_MS } from '../api/get-queue-health';
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

function renderStrip(onOpenRelays?: () => void) {
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <HealthStrip token="health-token" onOpenRelays={onOpenRelays} />
    </QueryClientProvider>,
  );
  return screen.getByRole('region', { name: 'Queue health' });
}

describe('queue health strip', () => {
  it('shows the live workers, due now, oldest Queued, in flight, delivered and failures', async () => {
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
        liveWorkers: 2,
      }),
    );
    const strip = renderStrip();
    expect(await within(strip).findByRole('button', { name: '2 workers' })).toHaveAttribute('aria-haspopup', 'dialog');
    const figure = (label: string) => within(strip).getByText(label).closest('div');
    expect(figure('Due now')).toHaveTextContent('1,234');
    expect(figure('Oldest Queued')).toHaveTextContent('3 h 5 min');
    expect(figure('In flight')).toHaveTextContent('12');
    expect(figure('Delivered 1 min')).toHaveTextContent('90');
    expect(figure('Delivered 1 h')).toHaveTextContent('5,400');
    expect(figure('Failed 1 h')).toHaveTextContent('60 (1.1 %)');
    expect(within(strip).queryByRole('alert')).toBeNull();
    expect(within(strip).queryByText(/No worker running/)).toBeNull();
    expect(auth[0]).toBe('Token health-token');
  });

  it('one worker is "1 worker"', async () => {
    serve(buildQueueHealth({ liveWorkers: 1, workerActiveLastMinute: true }));
    expect(await within(renderStrip()).findByRole('button', { name: '1 worker' })).toBeInTheDocument();
  });

  it('says "No worker running" loudly (role=alert, red strip) when due mails wait and no worker heartbeat is live', async () => {
    serve(buildQueueHealth({ queued: 7, dueNow: 7, liveWorkers: 0 }));
    const strip = renderStrip();
    expect(await within(strip).findByRole('alert')).toHaveTextContent('No worker running: 7 due mails wait');
    expect(strip).toHaveClass('health--alarm');
    expect(within(strip).getByRole('button', { name: 'Show instances' })).toBeInTheDocument();
  });

  it('says "No worker running" with nothing due too (no alarm), though a worker was active a moment ago', async () => {
    serve(buildQueueHealth({ liveWorkers: 0, lastWorkerActivityAt: '2026-11-23T13:09:50.000Z' }));
    const strip = renderStrip();
    expect(await within(strip).findByText('No worker running')).toBeInTheDocument();
    expect(within(strip).queryByRole('alert')).toBeNull();
    expect(strip).not.toHaveClass('health--alarm');
  });

  it('a worker that stops shows at the next poll, without a reload', async () => {
    let liveWorkers = 1;
    server.use(http.get('/api/v1/queue/health', () => HttpResponse.json({ data: [buildQueueHealth({ liveWorkers, dueNow: 2 })] })));
    const client = createTestQueryClient();
    render(
      <QueryClientProvider client={client}>
        <HealthStrip token="health-token" />
      </QueryClientProvider>,
    );
    const strip = screen.getByRole('region', { name: 'Queue health' });
    expect(await within(strip).findByRole('button', { name: '1 worker' })).toBeInTheDocument();
    liveWorkers = 0;
    // The strip polls every HEALTH_POLL_MS (5 s); the poll is what the test waits for.
    expect(await within(strip).findByRole('alert', {}, { timeout: HEALTH_POLL_MS + 10_000 })).toHaveTextContent(
      'No worker running: 2 due mails wait',
    );
  }, 40_000);

  it('names a relay the workers report down, as a button that opens the Relays view', async () => {
    serve(buildQueueHealth({ liveWorkers: 1, relaysDown: ['sendgrid-eu'] }));
    const onOpenRelays = vi.fn();
    const strip = renderStrip(onOpenRelays);
    const button = await within(strip).findByRole('button', { name: 'Relay down: sendgrid-eu' });
    expect(button).toHaveAttribute('aria-haspopup', 'dialog');
    // A status, so a screen reader hears it when it appears; not the alarm's alert.
    expect(within(strip).getByRole('status')).toHaveTextContent('Relay down: sendgrid-eu');
    expect(within(strip).queryByRole('alert')).toBeNull();
    await userEvent.setup().click(button);
    expect(onOpenRelays).toHaveBeenCalledTimes(1);
  });

  it('names every relay down; says nothing of relays when none is, or the server does not report them', async () => {
    serve(buildQueueHealth({ liveWorkers: 1, relaysDown: ['eu', 'us'] }));
    expect(await within(renderStrip(() => undefined)).findByRole('button', { name: 'Relays down: eu, us' })).toBeVisible();
    cleanup();

    serve(buildQueueHealth({ liveWorkers: 1, relaysDown: [] }));
    const none = renderStrip(() => undefined);
    expect(await within(none).findByRole('button', { name: '1 worker' })).toBeVisible();
    expect(within(none).queryByText(/Relay/)).toBeNull();
  });

  it('formats ages and rates', () => {
    expect([formatAge(null), formatAge(59), formatAge(600), formatAge(90_000)]).toEqual(['—', '59 s', '10 min', '1 d 1 h']);
    expect([formatRate(null), formatRate(0), formatRate(0.5)]).toEqual(['—', '0 %', '50 %']);
  });
});
