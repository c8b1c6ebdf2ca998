import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { InstancesResponse } from '@outbox/contract';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildInstance, buildQueueHealth } from '../../../test/factories';
import { server } from '../../../test/server';
import { HealthStrip } from './health-strip';

function serve(instances: InstancesResponse) {
  const auth: (string | null)[] = [];
  server.use(
    http.get('/api/v1/queue/health', () => HttpResponse.json({ data: [buildQueueHealth({ liveWorkers: instances.meta.liveWorkers })] })),
    http.get('/api/v1/instances', ({ request }) => {
      auth.push(request.headers.get('authorization'));
      return HttpResponse.json(instances);
    }),
  );
  return auth;
}

function renderStrip() {
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <button type="button">before</button>
      <HealthStrip token="health-token" />
    </QueryClientProvider>,
  );
  return screen.getByRole('region', { name: 'Queue health' });
}

describe('Instances view', () => {
  it('opens from the strip, lists each instance with roles, host/pid, version, age, last heartbeat and load, stale ones marked; Esc closes it', async () => {
    const user = userEvent.setup();
    const auth = serve({
      data: [
        buildInstance(),
        buildInstance({
          id: 'aa11bb22cc33dd44',
          host: 'api-2',
          pid: 77,
          roles: ['api'],
          inFlight: null,
          deliveredLastMinute: null,
          startedAt: '2026-11-23T13:00:00.000Z',
        }),
        buildInstance({
          id: 'dead00beef11cafe',
          host: 'worker-9',
          pid: 9,
          roles: ['worker'],
          state: 'stale',
          heartbeatAgeSeconds: 42.7,
          lastHeartbeatAt: '2026-11-23T13:09:17.300Z',
          inFlight: 5,
          deliveredLastMinute: 0,
        }),
      ],
      meta: { at: '2026-11-23T13:10:00.000Z', liveInstances: 2, liveWorkers: 1 },
    });
    const strip = renderStrip();
    const opener = await within(strip).findByRole('button', { name: '1 worker' });
    await user.click(opener);
    const dialog = await screen.findByRole('dialog', { name: 'Instances' });
    expect(await within(dialog).findByText('2 live instances · 1 worker · 1 stale')).toBeInTheDocument();
    const table = within(dialog).getByRole('table');
    const rows = within(table).getAllByRole('row').slice(1);
    expect(
      rows.map((row) =>
        within(row)
          .getAllByRole('cell')
          .map((cell) => cell.textContent),
      ),
    ).toEqual([
      ['3f9a0c1d', 'Live', 'api, worker, smtp', 'mail-1 / 4242', '0.3.0', '1 h 0 min ago', '2 s ago', '3', '120'],
      ['aa11bb22', 'Live', 'api', 'api-2 / 77', '0.3.0', '10 min ago', '2 s ago', '—', '—'],
      ['dead00be', 'Stale (stopped?)', 'worker', 'worker-9 / 9', '0.3.0', '1 h 0 min ago', '42 s ago', '5', '0'],
    ]);
    expect(within(rows[2]!).getByText('Stale (stopped?)')).toHaveAttribute(
      'title',
      expect.stringContaining('No heartbeat for more than 15 s'),
    );
    expect(auth[0]).toBe('Token health-token');
    // Keyboard: focus starts on Close; Esc closes and focus returns to the strip's button.
    expect(within(dialog).getByRole('button', { name: 'Close' })).toHaveFocus();
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(opener).toHaveFocus();
  });

  it('says so when no instance is known', async () => {
    const user = userEvent.setup();
    serve({ data: [], meta: { at: '2026-11-23T13:10:00.000Z', liveInstances: 0, liveWorkers: 0 } });
    const strip = renderStrip();
    await user.click(await within(strip).findByRole('button', { name: 'Show instances' }));
    const dialog = await screen.findByRole('dialog', { name: 'Instances' });
    expect(await within(dialog).findByText('No instance has written a heartbeat in the last hour.')).toBeInTheDocument();
    expect(within(dialog).getByText('0 live instances · no worker running')).toBeInTheDocument();
  });
});
