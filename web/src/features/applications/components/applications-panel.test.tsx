import type { Application } from '@outbox/contract';
import { QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { describe, expect, it } from 'vitest';
import { createTestQueryClient } from '../../../test/app-harness';
import { server } from '../../../test/server';
import { ApplicationsButton } from './applications-button';

function application(id: number, overrides: Partial<Application> = {}): Application {
  return {
    id,
    name: `app-${id}`,
    createdAt: '2026-11-25T10:00:00.000Z',
    createdBy: 'operator:kim',
    lastUsedAt: '2026-11-25T11:00:00.000Z',
    revokedAt: null,
    previousKeyExpiresAt: null,
    mailsLast24h: 1234,
    mailsLast24hIsLowerBound: false,
    lane: 'transactional',
    contentRetentionDays: null,
    ...overrides,
  };
}

function serveApplications(initial: Application[]) {
  let applications = [...initial];
  const calls: { method: string; path: string; body: unknown; auth: string | null }[] = [];
  const record = async (request: Request) => {
    const body = request.method === 'GET' ? null : await request.json().catch(() => null);
    calls.push({ method: request.method, path: new URL(request.url).pathname, body, auth: request.headers.get('authorization') });
    return body;
  };
  const replace = (id: number, change: Partial<Application>) => {
    applications = applications.map((a) => (a.id === id ? { ...a, ...change } : a));
    return applications.find((a) => a.id === id)!;
  };
  server.use(
    http.get('/api/v1/applications', async ({ request }) => {
      await record(request);
      return HttpResponse.json({ data: applications });
    }),
    http.post('/api/v1/applications', async ({ request }) => {
      const { name } = (await record(request)) as { name: string };
      if (applications.some((a) => a.name === name)) {
        return HttpResponse.json(
          { error: { code: 'application_exists', message: `An application named ${name} exists already; pick another name.` } },
          { status: 409 },
        );
      }
      const created = application(9, { name, lastUsedAt: null, mailsLast24h: 0 });
      applications = [...applications, created];
      return HttpResponse.json({ data: [{ ...created, key: 'obx_new-key-shown-once' }] }, { status: 201 });
    }),
    http.patch('/api/v1/applications/:id', async ({ request, params }) => {
      const change = (await record(request)) as Partial<Application>;
      return HttpResponse.json({ data: [replace(Number(params.id), change)] });
    }),
    http.post('/api/v1/applications/:id/revoke', async ({ request, params }) => {
      await record(request);
      return HttpResponse.json({ data: [replace(Number(params.id), { revokedAt: '2026-11-25T12:00:00.000Z' })] });
    }),
    http.post('/api/v1/applications/:id/rotate', async ({ request, params }) => {
      await record(request);
      const rotated = replace(Number(params.id), { previousKeyExpiresAt: '2026-11-25T13:00:00.000Z' });
      return HttpResponse.json({ data: [{ ...rotated, key: 'obx_rotated-key' }] });
    }),
  );
  return calls;
}

async function openPanel() {
  const user = userEvent.setup();
  render(
    <QueryClientProvider client={createTestQueryClient()}>
      <ApplicationsButton token="ops-token" />
    </QueryClientProvider>,
  );
  await user.click(screen.getByRole('button', { name: 'Applications' }));
  return { user, dialog: screen.getByRole('dialog', { name: 'Applications' }) };
}

describe('applications panel', () => {
  it('lists applications with who made them, last use, mails in 24 hours and state', async () => {
    const calls = serveApplications([
      application(1, { name: 'shop' }),
      application(2, { name: 'crm', createdBy: 'cli', lastUsedAt: null, mailsLast24h: 10_000, mailsLast24hIsLowerBound: true }),
      application(3, { name: 'old', createdBy: null, revokedAt: '2026-11-24T10:00:00.000Z', mailsLast24h: 0 }),
    ]);
    const { dialog } = await openPanel();
    const table = within(dialog).getByRole('region', { name: 'Applications' });
    const rows = (await within(table).findAllByRole('row')).slice(1);
    expect(rows).toHaveLength(3);
    expect(within(rows[0]!).getByText('shop')).toBeVisible();
    expect(within(rows[0]!).getByText('kim')).toBeVisible();
    expect(within(rows[0]!).getByText('1,234')).toBeVisible();
    expect(within(rows[0]!).getByText('Active')).toBeVisible();
    expect(within(rows[1]!).getByText('command line')).toBeVisible();
    expect(within(rows[1]!).getByText('10,000+')).toBeVisible();
    expect(within(rows[2]!).getByText(/Revoked/)).toBeVisible();
    // A revoked application can be renamed (to free its name), not rotated or revoked again.
    expect(within(rows[2]!).getByRole('button', { name: 'Rename old' })).toBeVisible();
    expect(within(rows[2]!).queryByRole('button', { name: 'Revoke old' })).toBeNull();
    expect(within(rows[2]!).queryByRole('button', { name: 'Rotate the key of old' })).toBeNull();
    expect(calls[0]).toMatchObject({ method: 'GET', path: '/api/v1/applications', auth: 'Token ops-token' });
  });

  it('creates an application and shows its key once, with a Copy button; a refusal shows the server’s sentence', async () => {
    const calls = serveApplications([application(1, { name: 'shop' })]);
    const { user, dialog } = await openPanel();
    await user.click(within(dialog).getByRole('button', { name: 'New application' }));
    const form = within(dialog).getByRole('form', { name: 'New application' });
    await user.type(within(form).getByLabelText('Name'), 'shop');
    await user.click(within(form).getByRole('button', { name: 'Create' }));
    expect(await within(form).findByRole('alert')).toHaveTextContent('An application named shop exists already; pick another name.');

    await user.clear(within(form).getByLabelText('Name'));
    await user.type(within(form).getByLabelText('Name'), 'billing');
    await user.click(within(form).getByRole('button', { name: 'Create' }));
    const reveal = await within(dialog).findByRole('region', { name: 'New API key' });
    expect(within(reveal).getByText('obx_new-key-shown-once')).toBeVisible();
    expect(within(reveal).getByRole('button', { name: 'Copy the key of billing' })).toBeVisible();
    expect(calls.filter((c) => c.method === 'POST').map((c) => c.body)).toEqual([
      { name: 'shop', lane: 'transactional' },
      { name: 'billing', lane: 'transactional' },
    ]);
    const table = within(dialog).getByRole('region', { name: 'Applications' });
    expect(await within(table).findByText('billing')).toBeVisible();

    await user.click(within(reveal).getByRole('button', { name: 'Done' }));
    expect(within(dialog).queryByText('obx_new-key-shown-once')).toBeNull();
  });

  it('renames, rotates with the chosen grace, and revokes only after a confirmation', async () => {
    const calls = serveApplications([application(1, { name: 'shop' })]);
    const { user, dialog } = await openPanel();
    await within(dialog).findByText('shop');

    await user.click(within(dialog).getByRole('button', { name: 'Rename shop' }));
    const rename = within(dialog).getByRole('form', { name: 'Rename shop' });
    await user.clear(within(rename).getByLabelText('New name for shop'));
    await user.type(within(rename).getByLabelText('New name for shop'), 'web-shop');
    await user.click(within(rename).getByRole('button', { name: 'Save' }));
    expect(await within(dialog).findByText('shop renamed to web-shop.')).toBeVisible();

    await user.click(await within(dialog).findByRole('button', { name: 'Rotate the key of web-shop' }));
    const rotate = within(dialog).getByRole('form', { name: 'Rotate the key of web-shop' });
    await user.selectOptions(within(rotate).getByLabelText('Old key keeps working for'), '24 hours');
    await user.click(within(rotate).getByRole('button', { name: 'Rotate' }));
    const reveal = await within(dialog).findByRole('region', { name: 'New API key' });
    expect(within(reveal).getByText('obx_rotated-key')).toBeVisible();
    expect(within(reveal).getByText(/The old key works until/)).toBeVisible();

    await user.click(within(dialog).getByRole('button', { name: 'Revoke web-shop' }));
    expect(calls.some((c) => c.path.endsWith('/revoke'))).toBe(false);
    expect(within(dialog).getByText('Revoke web-shop? Its key stops working at once.')).toBeVisible();
    await user.click(within(dialog).getByRole('button', { name: 'Keep' }));
    expect(calls.some((c) => c.path.endsWith('/revoke'))).toBe(false);
    await user.click(within(dialog).getByRole('button', { name: 'Revoke web-shop' }));
    await user.click(within(dialog).getByRole('button', { name: 'Revoke' }));
    await waitFor(() => expect(within(dialog).getByText('web-shop revoked: its key is refused from now on.')).toBeVisible());

    expect(calls.filter((c) => c.method !== 'GET').map((c) => [c.method, c.path, c.body])).toEqual([
      ['PATCH', '/api/v1/applications/1', { name: 'web-shop' }],
      ['POST', '/api/v1/applications/1/rotate', { graceSeconds: 86_400 }],
      ['POST', '/api/v1/applications/1/revoke', null],
    ]);
  });

  it('creates an application in the bulk lane, moves one between lanes, and sets how long its content is kept', async () => {
    const calls = serveApplications([application(1, { name: 'shop' })]);
    const { user, dialog } = await openPanel();
    const table = within(dialog).getByRole('region', { name: 'Applications' });
    await within(table).findByText('shop');
    expect(within(table).getByText('Default')).toBeVisible();

    await user.selectOptions(within(table).getByLabelText('Lane of shop'), 'bulk');
    expect(await within(dialog).findByText('shop now sends in the bulk lane.')).toBeVisible();

    await user.click(within(dialog).getByRole('button', { name: 'Content retention of shop' }));
    const form = within(dialog).getByRole('form', { name: 'Content retention of shop' });
    await user.type(within(form).getByLabelText(/Days its final mails keep their content/), '0');
    await user.click(within(form).getByRole('button', { name: 'Save' }));
    expect(await within(table).findByText('Removed once final')).toBeVisible();

    await user.click(within(dialog).getByRole('button', { name: 'New application' }));
    const create = within(dialog).getByRole('form', { name: 'New application' });
    await user.type(within(create).getByLabelText('Name'), 'news');
    await user.selectOptions(within(create).getByLabelText('Lane'), 'bulk');
    await user.click(within(create).getByRole('button', { name: 'Create' }));
    await within(dialog).findByRole('region', { name: 'New API key' });

    expect(calls.filter((c) => c.method !== 'GET').map((c) => [c.method, c.path, c.body])).toEqual([
      ['PATCH', '/api/v1/applications/1', { lane: 'bulk' }],
      ['PATCH', '/api/v1/applications/1', { contentRetentionDays: 0 }],
      ['POST', '/api/v1/applications', { name: 'news', lane: 'bulk' }],
    ]);
  });
});
