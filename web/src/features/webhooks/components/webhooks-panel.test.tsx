import type { CreateWebhookBody, WebhookDelivery, WebhookEndpoint } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { server } from '../../../test/server';
import { WebhooksButton } from './webhooks-button';

function endpoint(id: number, overrides: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id,
    url: `https://hooks.example.com/${id}`,
    description: 'CRM sync',
    eventTypes: [],
    application: null,
    enabled: true,
    disabledReason: null,
    createdAt: '2026-11-25T10:00:00.000Z',
    updatedAt: '2026-11-25T10:00:00.000Z',
    failingSince: null,
    previousSecretExpiresAt: null,
    last24h: { attempts: 120, succeeded: 118, failed: 2, successRate: 118 / 120 },
    ...overrides,
  };
}

const delivery: WebhookDelivery = {
  id: 77,
  endpointId: 1,
  endpointUrl: 'https://hooks.example.com/1',
  eventId: 'evt_abc',
  eventType: 'mail.sent',
  mailId: 42,
  state: 'retrying',
  createdAt: '2026-11-25T10:00:00.000Z',
  nextAttemptAt: '2026-11-25T10:05:00.000Z',
  attempts: [
    { at: '2026-11-25T10:00:00.000Z', httpStatus: 500, durationMs: 12, response: 'upstream down', error: null },
    { at: '2026-11-25T10:00:05.000Z', httpStatus: null, durationMs: 10000, response: '', error: 'timeout after 10000 ms' },
  ],
};

function serveWebhooks(initial: WebhookEndpoint[]) {
  let endpoints = [...initial];
  const calls: { method: string; path: string; body: unknown; auth: string | null }[] = [];
  const record = async (request: Request) => {
    const url = new URL(request.url);
    const body = request.method === 'GET' || request.method === 'DELETE' ? null : await request.json().catch(() => null);
    calls.push({ method: request.method, path: url.pathname + url.search, body, auth: request.headers.get('authorization') });
    return body;
  };
  server.use(
    http.get('/api/v1/webhooks', async ({ request }) => {
      await record(request);
      return HttpResponse.json({ data: endpoints });
    }),
    http.get('/api/v1/applications', () => HttpResponse.json({ data: [{ id: 3, name: 'shop' }] })),
    http.post('/api/v1/webhooks', async ({ request }) => {
      const body = (await record(request)) as CreateWebhookBody;
      if (body.url.startsWith('http://10.')) {
        return HttpResponse.json({ error: { code: 'invalid_url', message: 'url: 10.0.0.5 is a private address' } }, { status: 400 });
      }
      const created = endpoint(9, {
        url: body.url,
        description: body.description ?? '',
        eventTypes: body.eventTypes ?? [],
        application: { id: 3, name: 'shop' },
      });
      endpoints = [...endpoints, created];
      return HttpResponse.json({ data: [{ ...created, secret: 'whsec_c2VjcmV0LXNlY3JldA==' }] }, { status: 201 });
    }),
    http.patch('/api/v1/webhooks/:id', async ({ request, params }) => {
      const body = (await record(request)) as { enabled?: boolean };
      endpoints = endpoints.map((e) =>
        e.id === Number(params.id)
          ? { ...e, enabled: body.enabled ?? e.enabled, disabledReason: body.enabled === false ? 'operator' : null }
          : e,
      );
      return HttpResponse.json({ data: [endpoints.find((e) => e.id === Number(params.id))] });
    }),
    http.post('/api/v1/webhooks/:id/rotate-secret', async ({ request, params }) => {
      await record(request);
      const e = endpoints.find((x) => x.id === Number(params.id))!;
      return HttpResponse.json({ data: [{ ...e, previousSecretExpiresAt: '2026-11-26T10:00:00.000Z', secret: 'whsec_bmV3LXNlY3JldA==' }] });
    }),
    http.post('/api/v1/webhooks/:id/test', async ({ request }) => {
      await record(request);
      return HttpResponse.json({ data: [{ eventId: 'evt_test1' }] }, { status: 202 });
    }),
    http.delete('/api/v1/webhooks/:id', async ({ request, params }) => {
      await record(request);
      endpoints = endpoints.filter((e) => e.id !== Number(params.id));
      return HttpResponse.json({ data: [{ id: Number(params.id) }] });
    }),
    http.get('/api/v1/webhooks/:id/deliveries', async ({ request }) => {
      await record(request);
      return HttpResponse.json({ data: [delivery], meta: { nextCursor: null } });
    }),
    http.post('/api/v1/webhooks/:id/replay', async ({ request }) => {
      const body = (await record(request)) as { eventId?: string };
      return HttpResponse.json({ data: [{ queued: body.eventId ? 1 : 5 }] }, { status: 202 });
    }),
  );
  return calls;
}

async function openPanel() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <WebhooksButton token="ops-token" />
    </QueryClientProvider>,
  );
  await user.click(screen.getByRole('button', { name: 'Webhooks' }));
  return { user, dialog: screen.getByRole('dialog', { name: 'Webhooks' }) };
}

describe('webhooks panel', () => {
  it('lists endpoints with their state and 24-hour success rate', async () => {
    const calls = serveWebhooks([
      endpoint(1),
      endpoint(2, { enabled: false, disabledReason: 'gone', last24h: { attempts: 0, succeeded: 0, failed: 0, successRate: null } }),
    ]);
    const { dialog } = await openPanel();
    const rows = (await within(dialog).findAllByRole('row')).slice(1);
    expect(rows).toHaveLength(2);
    expect(within(rows[0]!).getByText('98.3 % of 120')).toBeVisible();
    expect(within(rows[0]!).getByText('Every event')).toBeVisible();
    expect(within(rows[0]!).getByText('All applications')).toBeVisible();
    expect(within(rows[1]!).getByText('Disabled: the receiver answered 410 Gone')).toBeVisible();
    expect(within(rows[1]!).getByText('No attempts')).toBeVisible();
    expect(within(rows[1]!).getByRole('button', { name: 'Enable https://hooks.example.com/2' })).toBeVisible();
    expect(calls[0]!.auth).toBe('Token ops-token');
  });

  it('creates an endpoint, shows the server refusal naming the field, and shows the secret once', async () => {
    const calls = serveWebhooks([]);
    const { user, dialog } = await openPanel();
    await within(dialog).findByText(/No endpoints yet/);
    await user.click(within(dialog).getByRole('button', { name: 'Add endpoint' }));
    const form = within(dialog).getByRole('form', { name: 'New endpoint' });
    await user.type(within(form).getByLabelText('URL'), 'http://10.0.0.5/hook');
    await user.click(within(form).getByRole('button', { name: 'Create endpoint' }));
    expect(await within(form).findByRole('alert')).toHaveTextContent('url: 10.0.0.5 is a private address');

    await user.clear(within(form).getByLabelText('URL'));
    await user.type(within(form).getByLabelText('URL'), 'https://crm.example.com/hook');
    await user.type(within(form).getByLabelText('Description'), 'CRM');
    await user.selectOptions(within(form).getByLabelText('Application'), 'shop');
    await user.click(within(form).getByRole('checkbox', { name: 'mail.sent' }));
    await user.click(within(form).getByRole('checkbox', { name: 'mail.failed' }));
    await user.click(within(form).getByRole('button', { name: 'Create endpoint' }));

    const secret = await within(dialog).findByTestId('webhook-secret');
    expect(secret).toHaveTextContent('whsec_c2VjcmV0LXNlY3JldA==');
    expect(within(dialog).getByText(/it is not shown again/)).toBeVisible();
    const created = calls.filter((c) => c.method === 'POST').at(-1)!;
    expect(created.body).toEqual({
      url: 'https://crm.example.com/hook',
      description: 'CRM',
      eventTypes: ['mail.sent', 'mail.failed'],
      applicationId: 3,
      enabled: true,
    });
    await user.click(within(dialog).getByRole('button', { name: 'Done' }));
    expect(within(dialog).queryByTestId('webhook-secret')).toBeNull();
  });

  it('disables, rotates the secret, sends a test event and deletes after a confirmation', async () => {
    const calls = serveWebhooks([endpoint(1)]);
    const { user, dialog } = await openPanel();
    await user.click(await within(dialog).findByRole('button', { name: 'Disable https://hooks.example.com/1' }));
    await within(dialog).findByText('Disabled');
    expect(calls.find((c) => c.method === 'PATCH')!.body).toEqual({ enabled: false });

    await user.click(within(dialog).getByRole('button', { name: 'Rotate secret of https://hooks.example.com/1' }));
    expect(await within(dialog).findByTestId('webhook-secret')).toHaveTextContent('whsec_bmV3LXNlY3JldA==');
    expect(within(dialog).getByText(/old one keeps signing beside it for 24 hours/)).toBeVisible();

    await user.click(within(dialog).getByRole('button', { name: 'Enable https://hooks.example.com/1' }));
    await user.click(await within(dialog).findByRole('button', { name: 'Send test to https://hooks.example.com/1' }));
    await within(dialog).findByText(/Test event evt_test1 queued/);

    await user.click(within(dialog).getByRole('button', { name: 'Delete https://hooks.example.com/1' }));
    await user.click(within(dialog).getByRole('button', { name: 'Delete' }));
    await within(dialog).findByText(/No endpoints yet/);
    expect(calls.some((c) => c.method === 'DELETE' && c.path === '/api/v1/webhooks/1')).toBe(true);
  });

  it("shows an endpoint's delivery log with every attempt, and replays one event or every failure since a time", async () => {
    const calls = serveWebhooks([endpoint(1)]);
    const { user, dialog } = await openPanel();
    await user.click(await within(dialog).findByRole('button', { name: 'Deliveries of https://hooks.example.com/1' }));
    const log = await within(dialog).findByRole('region', { name: 'Delivery log' });
    await within(log).findByText('mail.sent');
    expect(within(log).getByText('#42')).toBeVisible();
    expect(within(log).getByText('timeout after 10000 ms')).toBeVisible();

    const toggle = within(log).getByRole('button', { name: 'Attempts (2)' });
    expect(toggle).toHaveAttribute('aria-expanded', 'false');
    await user.click(toggle);
    expect(toggle).toHaveAttribute('aria-expanded', 'true');
    expect(within(log).getByText('upstream down')).toBeVisible();
    expect(within(log).getByText(/HTTP 500 in 12 ms/)).toBeVisible();

    await user.click(within(log).getByRole('button', { name: 'Replay mail.sent evt_abc' }));
    await within(dialog).findByText('1 delivery queued again.');
    expect(calls.filter((c) => c.path === '/api/v1/webhooks/1/replay').at(-1)!.body).toEqual({ eventId: 'evt_abc' });

    await user.type(within(dialog).getByLabelText('Failed since'), '2026-11-25T09:00');
    await user.click(within(dialog).getByRole('button', { name: 'Replay failed' }));
    await within(dialog).findByText('5 deliveries queued again.');
    const body = calls.filter((c) => c.path === '/api/v1/webhooks/1/replay').at(-1)!.body as { failedSince: string };
    expect(new Date(body.failedSince).getTime()).toBe(new Date('2026-11-25T09:00').getTime());

    await user.selectOptions(within(dialog).getByLabelText('State'), 'failed');
    await waitFor(() => expect(calls.some((c) => c.path.includes('state=failed'))).toBe(true));

    await user.click(within(dialog).getByRole('button', { name: '← Endpoints' }));
    expect(await within(dialog).findByRole('region', { name: 'Webhook endpoints' })).toBeVisible();
  });
});
