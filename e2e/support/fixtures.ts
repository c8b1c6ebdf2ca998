/**
 * The suite's `test`: every test gets its worker's server's address as baseURL, an API client logged in as
 * the operator (`api`), the console's API traffic (`traffic`), the console page object (`app`) and `alerts`,
 * which accepts every window.alert and fails the test if one appears that the test did not expect.
 *
 * Each Playwright worker starts a server of its own (`suiteServer`, worker-scoped), so the workers' tests
 * never change each other's data; a worker's files run one after another on its server, as they did when the
 * whole suite shared one.
 */
import { test as base, expect, type Dialog } from '@playwright/test';
import { Api } from './api';
import { ConsolePage } from './console';
import type { SuiteEnv } from './env';
import { startServer, type RunningServer } from './server';
import { Traffic } from './traffic';

export interface SeenDialog {
  type: string;
  message: string;
}

export class Alerts {
  readonly seen: SeenDialog[] = [];
  private taken = 0;

  handle(dialog: Dialog): Promise<void> {
    this.seen.push({ type: dialog.type(), message: dialog.message() });
    return dialog.accept();
  }

  /** Waits for the next dialog the test has not looked at yet, and returns it. */
  async next(): Promise<SeenDialog> {
    await expect.poll(() => this.seen.length, { message: 'a dialog should appear' }).toBeGreaterThan(this.taken);
    return this.seen[this.taken++]!;
  }

  /** The dialogs the test has not looked at yet. */
  get unexpected(): SeenDialog[] {
    return this.seen.slice(this.taken);
  }
}

interface Fixtures {
  env: SuiteEnv;
  api: Api;
  traffic: Traffic;
  alerts: Alerts;
  app: ConsolePage;
}

interface WorkerFixtures {
  /** This worker's server: the built server on a fresh DATA_DIR seeded with the demo data (support/server.ts). */
  suiteServer: RunningServer;
  /**
   * The operator's session for `api`, one per worker: a login hashes the password with scrypt on purpose
   * (server.ts sets 2^14), and most tests want an API client beside the console, not a login.
   * Tests that need a session of their own log in (the console's `app.login()`, or Api.login).
   */
  operatorToken: string;
}

export const test = base.extend<Fixtures, WorkerFixtures>({
  suiteServer: [
    // eslint-disable-next-line no-empty-pattern
    async ({}, use) => {
      const server = await startServer();
      await use(server);
      await server.stop();
    },
    // The start waits up to 120 s for /healthz on a loaded machine (support/server.ts).
    { scope: 'worker', timeout: 180_000 },
  ],
  operatorToken: [
    async ({ suiteServer, playwright }, use) => {
      const request = await playwright.request.newContext({ baseURL: suiteServer.baseURL });
      const api = await Api.login(request, suiteServer.username, suiteServer.password);
      await request.dispose();
      await use(api.token);
    },
    { scope: 'worker' },
  ],
  env: async ({ suiteServer }, use) => {
    const { baseURL, username, password, apiKey, smtpPort } = suiteServer;
    await use({ baseURL, username, password, apiKey, smtpPort });
  },
  baseURL: async ({ env }, use) => {
    await use(env.baseURL);
  },
  api: async ({ request, operatorToken }, use) => {
    await use(new Api(request, operatorToken));
  },
  traffic: async ({ page }, use) => {
    await use(new Traffic(page));
  },
  alerts: [
    async ({ page }, use) => {
      const alerts = new Alerts();
      page.on('dialog', (dialog) => alerts.handle(dialog));
      await use(alerts);
      expect(alerts.unexpected, 'dialogs the test did not expect').toEqual([]);
    },
    { auto: true },
  ],
  app: async ({ page, traffic, env }, use) => {
    await use(new ConsolePage(page, traffic, env));
  },
});

export { expect };
