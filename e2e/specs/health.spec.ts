/**
 * Beyond the spec (issue 9 item 5, docs/console.md §10): the queue health strip above the table, polled every
 * few seconds. The suite's server runs with WORKER=off, so a due mail makes it say "No worker running".
 */
import AxeBuilder from '@axe-core/playwright';
import type { Api } from '../support/api';
import { expect, test } from '../support/fixtures';
import type { ApiCall } from '../support/traffic';

const isHealth = (call: ApiCall) => call.method === 'GET' && call.path === '/api/v1/queue/health';

/**
 * The demo data's Processing mails were claimed in the minute before the seed, which reads as worker activity
 * for the first minute of the suite's server: wait it out (only when this spec runs first).
 */
async function quietWorker(api: Api): Promise<void> {
  await expect.poll(async () => (await api.health()).workerActiveLastMinute, { timeout: 90_000, intervals: [2000] }).toBe(false);
}

test.describe('Queue health strip', () => {
  test.describe.configure({ timeout: 180_000 });

  test('Beyond the spec: the strip shows the server\'s figures, polls them, and says "No worker running" while due mails wait', async ({
    app,
    api,
    env,
    page,
    traffic,
  }) => {
    await quietWorker(api);
    await app.login();
    const strip = page.getByRole('region', { name: 'Queue health' });
    await expect(strip).toBeVisible();
    const first = await traffic.next((c) => isHealth(c) && c.done, 0);
    expect(first.headers.authorization).toMatch(/^Token /);
    const health = (first.body as { data: Record<string, number | null>[] }).data[0]!;
    const figure = (label: string) => strip.locator('.health__figure').filter({ has: page.getByText(label, { exact: true }) });
    await expect(figure('Due now')).toHaveText(`Due now${(health.dueNow as number).toLocaleString('en-US')}`);
    await expect(figure('In flight')).toHaveText(`In flight${health.inFlight}`);
    await expect(figure('Delivered 1 h')).toHaveText(`Delivered 1 h${health.deliveredLastHour}`);
    // The seeded store has no due mail (its Queued mails are due in days): an idle worker is no alarm.
    expect(health.dueNow).toBe(0);
    await expect(strip.getByText('Worker idle')).toBeVisible();
    await expect(strip.getByRole('alert')).toHaveCount(0);

    // A submitted mail is due at once, and no worker takes it: the next poll says so, loudly.
    const mail = await api.submit(env.apiKey, {
      fromMail: 'health@example.com',
      to: [{ recipientMail: 'ann@example.net' }],
      subject: 'health strip',
      text: 'hi',
    });
    const alarm = strip.getByRole('alert');
    await expect(alarm).toHaveText('No worker running: 1 due mail waits', { timeout: 15_000 });
    await expect(figure('Due now')).toHaveText('Due now1');
    await expect(figure('Oldest Queued')).toContainText(/\d+ (s|min|h|d)/);
    expect(traffic.count(isHealth)).toBeGreaterThanOrEqual(2);
    const axe = await new AxeBuilder({ page }).include('.health').analyze();
    expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
    await page.screenshot({ path: test.info().outputPath('health-alarm.png') });

    // Dequeued, it is no longer due: the alarm goes at the next poll.
    expect(await api.dequeue(mail.id)).toBe(200);
    await expect(alarm).toHaveCount(0, { timeout: 15_000 });
    expect((await api.health()).dueNow).toBe(0);
  });

  test('Beyond the spec: at 1024×700 the strip and the row buttons both fit', async ({ app, page }) => {
    await page.setViewportSize({ width: 1024, height: 700 });
    await app.login();
    await expect(page.getByRole('region', { name: 'Queue health' })).toBeVisible();
    const button = app.dataRows.getByRole('button').first();
    await expect(button).toBeInViewport();
    const box = (await button.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(1024);
  });
});
