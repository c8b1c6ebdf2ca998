/**
 * Beyond the spec (docs/console.md §10.22): the Relays view in a real browser against the built
 * server: a relay added (its login typed once, never shown back), a route added through the editor, both still
 * there after a reload of the page, the relay's removal refused while the route names it, then both removed; axe
 * clean with the view open in light and dark, screenshots at 1440×900 and 1024×700; and the health strip's "Relay
 * down", which opens the view. Relay health (`GET /api/v1/relays/health`) may not exist on this server: the view
 * shows Unknown then, and this spec accepts either.
 */
import type { APIRequestContext } from '@playwright/test';
import { axeViolations } from '../support/axe';
import { expect, test } from '../support/fixtures';
import { forEachLook, forEachScheme } from '../support/looks';

/** The API behind the console's back, for the screenshots' scenery and for leaving the server as it was found. */
function relaysApi(request: APIRequestContext, token: string) {
  const headers = { Authorization: `Token ${token}` };
  return {
    async add(body: Record<string, unknown>): Promise<number> {
      const response = await request.post('/api/v1/relays', { headers, data: body });
      expect(response.status(), 'POST /api/v1/relays').toBe(201);
      return ((await response.json()) as { data: { id: number }[] }).data[0]!.id;
    },
    async putRoutes(routes: unknown[]): Promise<void> {
      expect((await request.put('/api/v1/routes', { headers, data: { routes } })).status(), 'PUT /api/v1/routes').toBe(200);
    },
    async remove(id: number): Promise<void> {
      expect((await request.delete(`/api/v1/relays/${id}`, { headers })).status(), 'DELETE /api/v1/relays/{id}').toBe(204);
    },
    async names(): Promise<string[]> {
      const response = await request.get('/api/v1/relays', { headers });
      return ((await response.json()) as { data: { name: string }[] }).data.map((relay) => relay.name);
    },
  };
}

test.describe('Relays', () => {
  // Each test starts from app.login() or app.open(): one page serves them in turn, logged out in-app (support/fixtures.ts).
  test.use({ reusePage: true });
  test.describe.configure({ timeout: 150_000 });

  test('Beyond the spec: add a relay and a route, see both after a reload, removal refused while routed, then remove both; axe clean', async ({
    app,
    page,
    api,
    request,
  }) => {
    const name = `e2e-${Date.now().toString(36)}`;
    const password = `pw-${Date.now().toString(36)}-never-shown`;
    const server = relaysApi(request, api.token);

    await app.login();
    await page.getByRole('button', { name: 'Relays', exact: true }).click();
    const view = page.getByRole('dialog', { name: 'Relays' });
    await expect(view).toHaveAttribute('aria-modal', 'true');
    const table = view.getByRole('table', { name: 'Relay list' });
    // The default relay (RELAY_URL) is always listed, its state in words whether or not the server reports health.
    const defaultRow = table.getByRole('row').filter({ hasText: 'RELAY_URL, or the capture relay' });
    await expect(defaultRow.getByRole('cell').nth(1)).toHaveText(/^(Unknown|Idle|Up|Throttled|Down)/);

    await view.getByRole('button', { name: 'Add relay' }).click();
    const form = view.getByRole('form', { name: 'New relay' });
    await form.getByLabel('Name', { exact: true }).fill(name);
    await form.getByLabel('URL').fill('smtp://relay.example.invalid:587');
    await form.getByLabel('Username').fill('mailer');
    await expect(form.getByLabel('Password')).toHaveAttribute('type', 'password');
    await form.getByLabel('Password').fill(password);
    await form.getByLabel('Per second (empty: no limit)').fill('20');
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'new relay form').toEqual([]);
    await form.getByRole('button', { name: 'Add relay' }).click();
    await expect(view.getByText(`Relay ${name} added.`)).toBeVisible();
    const relayRow = table.getByRole('row').filter({ hasText: name });
    await expect(relayRow).toContainText('TLS required · login set · 5 connections');
    // "Limit 20/s" without relay health, "— of 20/s" with it.
    await expect(relayRow).toContainText(/(Limit|of) 20\/s/);
    expect(await page.content()).not.toContain(password);
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'relay list').toEqual([]);

    // A route through the editor: recipients under *.example.de go to the new relay, then the default one.
    await view.getByRole('tab', { name: 'Routes' }).click();
    const editor = view.getByRole('form', { name: 'Routes' });
    await editor.getByRole('button', { name: 'Add rule' }).click();
    const rules = editor.getByRole('group', { name: /^Rule \d+$/ });
    const rule = rules.last();
    await rule.getByLabel('Recipient domain').fill('*.example.de');
    await rule.getByRole('combobox', { name: 'Primary relay', exact: true }).selectOption(name);
    await rule.getByRole('button', { name: /^Add a fallback to rule \d+$/ }).click();
    await expect(rule.getByRole('combobox', { name: 'Fallback 1', exact: true })).toHaveValue('default');
    expect(await axeViolations(page, { include: '[role="dialog"]' }), 'routes editor').toEqual([]);
    await editor.getByRole('button', { name: 'Save routes' }).click();
    await expect(editor.getByText(/^Routes saved: \d+ rules?\.$/)).toBeVisible();

    // After a reload (a new session: the token is in memory only), the server gives both back.
    await page.reload();
    await app.login();
    await page.getByRole('button', { name: 'Relays', exact: true }).click();
    await expect(table.getByRole('row').filter({ hasText: name })).toContainText('login set');
    await view.getByRole('tab', { name: 'Routes' }).click();
    const saved = editor.getByRole('group', { name: /^Rule \d+$/ }).filter({ has: page.locator('input[value="*.example.de"]') });
    await expect(saved).toHaveCount(1);
    await expect(saved.getByRole('combobox', { name: 'Primary relay', exact: true })).toHaveValue(name);
    await expect(saved.getByRole('combobox', { name: 'Fallback 1', exact: true })).toHaveValue('default');

    // The relay cannot go while the route names it: the server's sentence says why.
    await view.getByRole('tab', { name: 'Relays' }).click();
    await relayRow.getByRole('button', { name: `Remove ${name}` }).click();
    await relayRow.getByRole('button', { name: 'Remove', exact: true }).click();
    await expect(view.getByRole('alert')).toHaveText(new RegExp(`^Relay ${name} is named by route \\d+; change the routes first\\.$`));
    await expect(relayRow).toHaveCount(1);

    // Remove the rule, then the relay.
    await view.getByRole('tab', { name: 'Routes' }).click();
    await saved.getByRole('button', { name: /^Remove rule \d+$/ }).click();
    await editor.getByRole('button', { name: 'Save routes' }).click();
    await expect(editor.getByText(/^Routes saved: /)).toBeVisible();
    await view.getByRole('tab', { name: 'Relays' }).click();
    await relayRow.getByRole('button', { name: `Remove ${name}` }).click();
    await relayRow.getByRole('button', { name: 'Remove', exact: true }).click();
    await expect(view.getByText(`Relay ${name} removed.`)).toBeVisible();
    await expect(relayRow).toHaveCount(0);
    expect(await server.names()).not.toContain(name);

    await page.keyboard.press('Escape');
    await expect(view).toHaveCount(0);
    await expect(page.getByRole('button', { name: 'Relays', exact: true })).toBeFocused();
  });

  test('Beyond the spec: the view and its routes editor read in light and dark at 1440×900 and 1024×700 (axe, screenshots)', async ({
    app,
    page,
    api,
    request,
  }) => {
    const server = relaysApi(request, api.token);
    const eu = await server.add({
      name: 'sendgrid-eu',
      url: 'smtp://smtp.eu.example.invalid:587',
      credentials: { username: 'apikey', password: 'SG.not-a-real-key' },
      maxPerSecond: 50,
      maxPerDay: 100_000,
    });
    const us = await server.add({ name: 'ses-us', url: 'smtps://email-smtp.us.example.invalid:465', maxConnections: 10 });
    await server.putRoutes([
      { match: { recipientDomain: '*.example.de' }, relays: ['sendgrid-eu', 'default'] },
      { match: { lane: 'bulk' }, relays: ['ses-us', 'sendgrid-eu'] },
    ]);
    try {
      await app.login();
      await forEachLook(page, async ({ scheme, width }) => {
        await page.getByRole('button', { name: 'Relays', exact: true }).click();
        const view = page.getByRole('dialog', { name: 'Relays' });
        await expect(view.getByRole('table', { name: 'Relay list' }).getByRole('row').filter({ hasText: 'ses-us' })).toBeVisible();
        // The health's first answer (or its 404) is in: no row says Checking….
        await expect(view.getByText('Checking…')).toHaveCount(0);
        // axe at one size a scheme: the sizes change the layout, not the colours or the names.
        if (width === 1440) expect(await axeViolations(page, { include: '[role="dialog"]' }), `relays ${scheme}`).toEqual([]);
        await page.screenshot({ path: test.info().outputPath(`relays-${scheme}-${width}.png`) });

        await view.getByRole('button', { name: 'Edit sendgrid-eu' }).click();
        await expect(view.getByRole('form', { name: 'Edit sendgrid-eu' })).toBeVisible();
        if (width === 1440) expect(await axeViolations(page, { include: '[role="dialog"]' }), `edit form ${scheme}`).toEqual([]);
        await page.screenshot({ path: test.info().outputPath(`relays-edit-${scheme}-${width}.png`) });
        await view.getByRole('button', { name: 'Cancel' }).click();

        await view.getByRole('tab', { name: 'Routes' }).click();
        const editor = view.getByRole('form', { name: 'Routes' });
        await expect(editor.getByRole('group', { name: 'Rule 2' })).toBeVisible();
        if (width === 1440) expect(await axeViolations(page, { include: '[role="dialog"]' }), `routes ${scheme}`).toEqual([]);
        await page.screenshot({ path: test.info().outputPath(`routes-${scheme}-${width}.png`) });
        await page.keyboard.press('Escape');
        await expect(view).toHaveCount(0);
      });
    } finally {
      await server.putRoutes([]);
      await server.remove(eu);
      await server.remove(us);
    }
  });

  test('Beyond the spec: the health strip names a relay down, and it opens the Relays view', async ({ app, page }) => {
    // page.route, because this server cannot produce it: its worker is off, so no relay is reported down. The
    // strip's answer is the server's own, with relaysDown added.
    await page.route('**/api/v1/queue/health', async (route) => {
      const response = await route.fetch();
      const body = (await response.json()) as { data: Record<string, unknown>[] };
      body.data[0]!.relaysDown = ['sendgrid-eu'];
      await route.fulfill({ response, json: body });
    });
    await app.login();
    const strip = page.getByRole('region', { name: 'Queue health' });
    const relayDown = strip.getByRole('button', { name: 'Relay down: sendgrid-eu' });
    await forEachScheme(page, async (scheme) => {
      await expect(relayDown).toBeVisible();
      expect(await axeViolations(page, { include: '.health' }), scheme).toEqual([]);
      await page.screenshot({
        path: test.info().outputPath(`strip-relay-down-${scheme}.png`),
        clip: { x: 0, y: 0, width: 1280, height: 200 },
      });
    });
    await relayDown.click();
    await expect(page.getByRole('dialog', { name: 'Relays' })).toBeVisible();
    await page.keyboard.press('Escape');
    await expect(relayDown).toBeFocused();
  });
});
