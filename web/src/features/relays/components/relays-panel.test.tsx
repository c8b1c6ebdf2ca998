import { useState } from 'react';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import type { Application, CreateRelayBody, Relay, RelayHealth, Route, RouteInput } from '@outbox/contract';
import { createTestQueryClient } from '../../../test/app-harness';
import { buildRelay, buildRelayHealth, buildRoute } from '../../../test/factories';
import { server } from '../../../test/server';
import { RELAY_HEALTH_POLL_MS } from '../api/list-relay-health';
import { RelaysButton } from './relays-button';

interface Served {
  relays?: Relay[];
  /**
   * A server without relay health answers 404, or 400 where its GET /api/v1/relays/:id takes the path ('misrouted').
   */
  health?: RelayHealth[] | 'missing' | 'misrouted';
  routes?: Route[];
  applications?: Pick<Application, 'id' | 'name' | 'revokedAt'>[];
}

const error = (status: number, code: string, message: string) => HttpResponse.json({ error: { code, message } }, { status });

/** A small in-memory server for the view's calls; `state` can be changed by a test between polls. */
function serve(initial: Served = {}) {
  const state = {
    relays: initial.relays ?? [buildRelay()],
    health: initial.health ?? [buildRelayHealth({ relay: 'default', state: 'idle', workers: 1 }), buildRelayHealth()],
    routes: initial.routes ?? [],
    applications: initial.applications ?? [],
    refuseRoutes: null as string | null,
  };
  const calls: { method: string; path: string; body: unknown; auth: string | null }[] = [];
  const record = async (request: Request) => {
    const body = request.method === 'GET' || request.method === 'DELETE' ? null : await request.json();
    calls.push({ method: request.method, path: new URL(request.url).pathname, body, auth: request.headers.get('authorization') });
    return body;
  };
  server.use(
    http.get('/api/v1/relays', async ({ request }) => {
      await record(request);
      return HttpResponse.json({ data: state.relays });
    }),
    http.get('/api/v1/relays/health', async ({ request }) => {
      await record(request);
      if (state.health === 'missing') return error(404, 'not_found', 'Route GET:/api/v1/relays/health not found');
      if (state.health === 'misrouted') return error(400, 'invalid_request', 'path.id must be integer.');
      return HttpResponse.json({ data: state.health });
    }),
    http.post('/api/v1/relays', async ({ request }) => {
      const body = (await record(request)) as CreateRelayBody;
      if (!body.url.startsWith('smtp')) return error(400, 'invalid_url', 'body.url must start with smtp:// or smtps://.');
      const relay = buildRelay({
        id: 7,
        name: body.name,
        url: body.url,
        tls: body.tls ?? 'require',
        hasCredentials: body.credentials !== undefined,
        maxPerSecond: body.maxPerSecond ?? null,
        maxPerDay: body.maxPerDay ?? null,
      });
      state.relays = [...state.relays, relay];
      return HttpResponse.json({ data: [relay] }, { status: 201 });
    }),
    http.patch('/api/v1/relays/:id', async ({ request, params }) => {
      const body = (await record(request)) as Partial<Relay>;
      if ((body.maxPerDay ?? 0) > 1e9) return error(400, 'invalid_request', 'body.maxPerDay must be <= 1000000000.');
      state.relays = state.relays.map((relay) => (relay.id === Number(params.id) ? { ...relay, ...body } : relay));
      return HttpResponse.json({ data: state.relays.filter((relay) => relay.id === Number(params.id)) });
    }),
    http.delete('/api/v1/relays/:id', async ({ request, params }) => {
      await record(request);
      const relay = state.relays.find((r) => r.id === Number(params.id))!;
      const naming = state.routes.filter((route) => route.relays.includes(relay.name));
      if (naming.length > 0)
        return error(409, 'relay_in_use', `Relay ${relay.name} is named by route ${naming[0]!.position}; change the routes first.`);
      state.relays = state.relays.filter((r) => r !== relay);
      return new HttpResponse(null, { status: 204 });
    }),
    http.get('/api/v1/routes', async ({ request }) => {
      await record(request);
      return HttpResponse.json({ data: state.routes });
    }),
    http.put('/api/v1/routes', async ({ request }) => {
      const body = (await record(request)) as { routes: RouteInput[] };
      if (state.refuseRoutes) return error(400, 'invalid_domain', state.refuseRoutes);
      state.routes = body.routes.map((route, position) => ({
        id: 100 + position,
        position,
        match: { application: null, senderDomain: null, recipientDomain: null, lane: null, ...route.match },
        relays: route.relays,
      }));
      return HttpResponse.json({ data: state.routes });
    }),
    http.get('/api/v1/applications', async ({ request }) => {
      await record(request);
      return HttpResponse.json({ data: state.applications });
    }),
  );
  return { state, calls };
}

function Harness() {
  const [isOpen, setOpen] = useState(false);
  return <RelaysButton token="ops-token" isOpen={isOpen} onOpenChange={setOpen} />;
}

async function openView() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <Harness />
    </QueryClientProvider>,
  );
  await user.click(screen.getByRole('button', { name: 'Relays' }));
  const dialog = await screen.findByRole('dialog', { name: 'Relays' });
  return { user, dialog };
}

/** The table's rows under its header, each as the texts of its cells. */
async function rowTexts(dialog: HTMLElement, first: string) {
  const table = within(dialog).getByRole('table', { name: 'Relay list' });
  await within(table).findByText(first);
  return within(table)
    .getAllByRole('row')
    .slice(1)
    .map((row) =>
      within(row)
        .getAllByRole('cell')
        .map((cell) => cell.textContent),
    );
}

describe('Relays view', () => {
  it('lists the default relay and each named one with its health: the state as a word, rate, today, latency, last error', async () => {
    const { calls } = serve({
      relays: [buildRelay({ id: 2, name: 'ses-us', hasCredentials: false, maxPerSecond: null, maxPerDay: null }), buildRelay()],
      health: [
        buildRelayHealth({
          relay: 'default',
          state: 'idle',
          since: null,
          ratePerSecond: null,
          maxPerSecond: null,
          sentToday: 0,
          maxPerDay: null,
          quotaUsed: null,
          latencyMs: null,
          workers: 1,
        }),
        buildRelayHealth({
          relay: 'sendgrid-eu',
          state: 'down',
          lastError: 'connect ECONNREFUSED 10.0.0.5:587',
          lastErrorAt: '2026-11-23T12:59:00.000Z',
        }),
        buildRelayHealth({
          relay: 'ses-us',
          state: 'throttled',
          ratePerSecond: 4,
          maxPerSecond: null,
          maxPerDay: null,
          quotaUsed: null,
          latencyMs: 240.6,
        }),
      ],
    });
    const { dialog } = await openView();
    const rows = await rowTexts(dialog, 'ses-us');
    expect(rows.map((cells) => cells[0]!.split('smtp')[0])).toEqual([
      'defaultRELAY_URL, or the capture relay without it',
      'sendgrid-eu',
      'ses-us',
    ]);
    expect(rows.map((cells) => cells[1])).toEqual([
      'Idle1 worker',
      expect.stringMatching(/^Downsince \d{4}-\d\d-\d\d \d\d:\d\d:\d\d2 workers$/),
      expect.stringMatching(/^Throttledsince .*2 workers$/),
    ]);
    expect(rows[1]!.slice(2, 5)).toEqual(['12.5/s of 50/s', '1,234 sent today1 % of 100,000 a day used', '85 ms']);
    expect(rows[1]![5]).toMatch(/^connect ECONNREFUSED 10\.0\.0\.5:587\d{4}-/);
    expect(rows[2]!.slice(2, 5)).toEqual(['4/s, no limit', '1,234 sent todayNo daily quota', '241 ms']);
    expect(rows[0]![5]).toBe('None');
    expect(rows[1]![0]).toContain('TLS required · login set · 5 connections');
    expect(rows[2]![0]).toContain('no login');
    // The default relay is RELAY_URL's: nothing to edit here.
    expect(within(dialog).queryByRole('button', { name: 'Edit default' })).toBeNull();
    expect(within(dialog).getByRole('button', { name: 'Edit sendgrid-eu' })).toBeVisible();
    expect(calls.find((call) => call.path === '/api/v1/relays')?.auth).toBe('Token ops-token');
  });

  it.each(['missing', 'misrouted'] as const)(
    'a server without relay health (%s) shows every state as Unknown and says why',
    async (health) => {
      serve({ health });
      const { dialog } = await openView();
      const rows = await rowTexts(dialog, 'sendgrid-eu');
      // The figures wait for the health; each state says Unknown in words.
      await within(dialog).findByText(/does not report relay health yet/);
      expect((await rowTexts(dialog, 'sendgrid-eu')).map((cells) => cells[1])).toEqual(['Unknown', 'Unknown']);
      expect(rows).toHaveLength(2);
    },
  );

  it('a relay that goes down shows at the next poll, without a reload', async () => {
    const { state } = serve();
    const { dialog } = await openView();
    const table = within(dialog).getByRole('table', { name: 'Relay list' });
    const row = (await within(table).findByText('sendgrid-eu')).closest('tr')!;
    expect(await within(row).findByText('Up')).toBeVisible();
    state.health = [buildRelayHealth({ state: 'down', lastError: '421 4.4.2 too many errors', lastErrorAt: '2026-11-23T13:00:00.000Z' })];
    expect(await within(row).findByText('Down', {}, { timeout: RELAY_HEALTH_POLL_MS + 10_000 })).toBeVisible();
    expect(within(row).getByText('421 4.4.2 too many errors')).toBeVisible();
  }, 40_000);

  it('adds a relay with a login typed in a password field, never shown back; a refusal names its field', async () => {
    const { calls } = serve({ relays: [] });
    const { user, dialog } = await openView();
    await user.click(within(dialog).getByRole('button', { name: 'Add relay' }));
    const form = within(dialog).getByRole('form', { name: 'New relay' });
    await user.type(within(form).getByLabelText('Name'), 'mailgun');
    await user.type(within(form).getByLabelText('URL'), 'http://smtp.mailgun.example');
    await user.type(within(form).getByLabelText('Username'), 'postmaster');
    const password = within(form).getByLabelText('Password');
    expect(password).toHaveAttribute('type', 'password');
    await user.type(password, 'hunter2-secret');
    await user.type(within(form).getByLabelText('Per second (empty: no limit)'), '20');
    await user.click(within(form).getByRole('button', { name: 'Add relay' }));

    expect(await within(form).findByRole('alert')).toHaveTextContent('body.url must start with smtp:// or smtps://.');
    expect(within(form).getByLabelText('URL')).toHaveAttribute('aria-invalid', 'true');
    expect(within(form).getByLabelText('Name')).not.toHaveAttribute('aria-invalid');

    await user.clear(within(form).getByLabelText('URL'));
    await user.type(within(form).getByLabelText('URL'), 'smtp://smtp.mailgun.example:587');
    await user.click(within(form).getByRole('button', { name: 'Add relay' }));
    expect(await within(dialog).findByText('Relay mailgun added.')).toBeVisible();
    expect(calls.filter((call) => call.method === 'POST').at(-1)?.body).toEqual({
      name: 'mailgun',
      url: 'smtp://smtp.mailgun.example:587',
      credentials: { username: 'postmaster', password: 'hunter2-secret' },
      maxPerSecond: 20,
    });
    const row = (await within(dialog).findByText('mailgun')).closest('tr')!;
    expect(within(row).getByText(/login set/)).toBeVisible();
    // Write-only: nowhere on the page once sent.
    expect(document.body.textContent).not.toContain('hunter2-secret');
    expect(screen.queryByDisplayValue('hunter2-secret')).toBeNull();

    // Editing it starts with an empty password field that says a login is set.
    await user.click(within(row).getByRole('button', { name: 'Edit mailgun' }));
    const edit = within(dialog).getByRole('form', { name: 'Edit mailgun' });
    expect(within(edit).getByLabelText('Password')).toHaveValue('');
    expect(within(edit).getByRole('group', { name: /Login \(set; type a new one to replace it\)/ })).toBeVisible();
  });

  it('edits a relay’s limits (only what changed is sent) and shows a refusal next to the form, its field marked', async () => {
    const { calls } = serve();
    const { user, dialog } = await openView();
    await user.click(await within(dialog).findByRole('button', { name: 'Edit sendgrid-eu' }));
    const form = within(dialog).getByRole('form', { name: 'Edit sendgrid-eu' });
    const perSecond = within(form).getByLabelText('Per second (empty: no limit)');
    const perDay = within(form).getByLabelText('Per day (empty: no quota)');
    expect(perSecond).toHaveValue(50);
    expect(perDay).toHaveValue(100_000);
    await user.clear(perDay);
    await user.type(perDay, '5000000000');
    await user.click(within(form).getByRole('button', { name: 'Save' }));
    const alert = await within(form).findByRole('alert');
    expect(alert).toHaveTextContent('body.maxPerDay must be <= 1000000000.');
    expect(perDay).toHaveAttribute('aria-invalid', 'true');
    expect(perDay).toHaveAttribute('aria-describedby', alert.id);
    expect(perSecond).not.toHaveAttribute('aria-invalid');

    await user.clear(perSecond);
    await user.type(perSecond, '25');
    await user.clear(perDay);
    await user.click(within(form).getByRole('button', { name: 'Save' }));
    expect(await within(dialog).findByText('Relay sendgrid-eu saved.')).toBeVisible();
    expect(calls.filter((call) => call.method === 'PATCH').map((call) => [call.path, call.body])).toEqual([
      ['/api/v1/relays/1', { maxPerDay: 5_000_000_000 }],
      ['/api/v1/relays/1', { maxPerSecond: 25, maxPerDay: null }],
    ]);
  });

  it('removes a relay after a confirmation; while a route names it the server’s 409 sentence is shown', async () => {
    const { state } = serve({ routes: [buildRoute({ relays: ['sendgrid-eu'] })] });
    const { user, dialog } = await openView();
    const row = (await within(dialog).findByText('sendgrid-eu')).closest('tr')!;
    await user.click(within(row).getByRole('button', { name: 'Remove sendgrid-eu' }));
    expect(within(row).getByText('Remove sendgrid-eu?')).toBeVisible();
    await user.click(within(row).getByRole('button', { name: 'Remove' }));
    expect(await within(dialog).findByRole('alert')).toHaveTextContent('Relay sendgrid-eu is named by route 0; change the routes first.');
    expect(within(row).getByText('sendgrid-eu')).toBeVisible();

    state.routes = [];
    await user.click(within(row).getByRole('button', { name: 'Remove sendgrid-eu' }));
    await user.click(within(row).getByRole('button', { name: 'Remove' }));
    expect(await within(dialog).findByText('Relay sendgrid-eu removed.')).toBeVisible();
    expect(within(dialog).queryByRole('alert')).toBeNull();
    expect(within(dialog).queryByText('sendgrid-eu')).toBeNull();
  });
});

describe('routes editor', () => {
  async function openRoutes(served: Served) {
    const served_ = serve(served);
    const opened = await openView();
    await opened.user.click(within(opened.dialog).getByRole('tab', { name: 'Routes' }));
    const form = await within(opened.dialog).findByRole('form', { name: 'Routes' });
    return { ...opened, ...served_, form };
  }
  const rule = (form: HTMLElement, n: number) => within(form).getByRole('group', { name: `Rule ${n}` });

  it('shows the rules in order, adds one, moves it up, and saves them all with one PUT', async () => {
    const { user, form, calls, dialog } = await openRoutes({
      relays: [buildRelay(), buildRelay({ id: 2, name: 'ses-us' })],
      applications: [{ id: 3, name: 'shop', revokedAt: null }],
      routes: [
        buildRoute({
          id: 1,
          position: 0,
          match: { application: 3, senderDomain: null, recipientDomain: null, lane: null },
          relays: ['sendgrid-eu', 'default'],
        }),
        buildRoute({
          id: 2,
          position: 1,
          match: { application: null, senderDomain: null, recipientDomain: null, lane: 'bulk' },
          relays: ['ses-us'],
        }),
      ],
    });
    expect(within(rule(form, 1)).getByLabelText('Application')).toHaveDisplayValue('shop');
    expect(within(rule(form, 1)).getByLabelText('Primary relay')).toHaveValue('sendgrid-eu');
    expect(within(rule(form, 1)).getByLabelText('Fallback 1')).toHaveValue('default');
    expect(within(rule(form, 2)).getByLabelText('Lane')).toHaveValue('bulk');
    expect(within(form).getByRole('button', { name: 'Save routes' })).toBeDisabled();

    await user.click(within(form).getByRole('button', { name: 'Add rule' }));
    const added = rule(form, 3);
    await user.type(within(added).getByLabelText('Recipient domain'), '*.example.de');
    await user.selectOptions(within(added).getByLabelText('Primary relay'), 'ses-us');
    await user.click(within(added).getByRole('button', { name: 'Add a fallback to rule 3' }));
    expect(within(added).getByLabelText('Fallback 1')).toHaveValue('default');
    expect(within(form).getByRole('status')).toHaveTextContent('Unsaved changes.');

    await user.click(within(added).getByRole('button', { name: 'Move rule 3 up' }));
    // Focus follows the rule to its new place.
    expect(within(rule(form, 2)).getByRole('button', { name: 'Move rule 2 up' })).toHaveFocus();
    expect(within(rule(form, 2)).getByLabelText('Recipient domain')).toHaveValue('*.example.de');
    await user.click(within(rule(form, 2)).getByRole('button', { name: 'Move rule 2 up' }));
    expect(within(rule(form, 1)).getByLabelText('Recipient domain')).toHaveValue('*.example.de');
    expect(within(rule(form, 1)).getByRole('button', { name: 'Move rule 1 up' })).toBeDisabled();

    await user.click(within(form).getByRole('button', { name: 'Save routes' }));
    expect(await within(form).findByText('Routes saved: 3 rules.')).toBeVisible();
    expect(calls.filter((call) => call.method === 'PUT').map((call) => call.body)).toEqual([
      {
        routes: [
          { match: { application: null, senderDomain: null, recipientDomain: '*.example.de', lane: null }, relays: ['ses-us', 'default'] },
          { match: { application: 3, senderDomain: null, recipientDomain: null, lane: null }, relays: ['sendgrid-eu', 'default'] },
          { match: { application: null, senderDomain: null, recipientDomain: null, lane: 'bulk' }, relays: ['ses-us'] },
        ],
      },
    ]);
    expect(within(form).getByRole('button', { name: 'Save routes' })).toBeDisabled();
    expect(within(dialog).getByRole('tab', { name: 'Routes' })).toHaveAttribute('aria-selected', 'true');
  });

  it('a refusal names the rule and field beside the form and marks that field; removing the rule and discarding work', async () => {
    const { user, form, state, calls } = await openRoutes({
      routes: [buildRoute({ id: 1, position: 0, relays: ['sendgrid-eu'] })],
    });
    await user.click(within(form).getByRole('button', { name: 'Add rule' }));
    await user.type(within(rule(form, 2)).getByLabelText('Sender domain'), 'not a domain');
    state.refuseRoutes = 'body.routes[1].match.senderDomain must be a domain such as example.com or *.example.com.';
    await user.click(within(form).getByRole('button', { name: 'Save routes' }));
    const alert = await within(form).findByRole('alert');
    expect(alert).toHaveTextContent('Rule 2, sender domain: must be a domain such as example.com or *.example.com.');
    const field = within(rule(form, 2)).getByLabelText('Sender domain');
    expect(field).toHaveAttribute('aria-invalid', 'true');
    expect(field).toHaveAttribute('aria-describedby', alert.id);
    expect(within(rule(form, 1)).getByLabelText('Sender domain')).not.toHaveAttribute('aria-invalid');

    await user.click(within(rule(form, 2)).getByRole('button', { name: 'Remove rule 2' }));
    expect(within(form).queryByRole('group', { name: 'Rule 2' })).toBeNull();
    // Back to the routes as loaded: nothing to save.
    expect(within(form).getByRole('button', { name: 'Save routes' })).toBeDisabled();

    await user.click(within(rule(form, 1)).getByRole('button', { name: 'Remove rule 1' }));
    expect(within(form).getByText('No routes: every mail goes to the default relay (RELAY_URL).')).toBeVisible();
    await user.click(within(form).getByRole('button', { name: 'Discard changes' }));
    expect(within(rule(form, 1)).getByLabelText('Primary relay')).toHaveValue('sendgrid-eu');
    expect(within(form).queryByRole('alert')).toBeNull();
    expect(calls.filter((call) => call.method === 'PUT')).toHaveLength(1);
  });
});
