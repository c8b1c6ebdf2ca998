/**
 * The suite's `test`: every test gets the running server's address as baseURL, an API client logged in as the
 * operator (`api`), the console's API traffic (`traffic`), the console page object (`app`) and `alerts`, which
 * accepts every window.alert and fails the test if one appears that the test did not expect.
 */
import { test as base, expect, type Dialog } from '@playwright/test';
import { Api } from './api';
import { ConsolePage } from './console';
import { suiteEnv, type SuiteEnv } from './env';
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

export const test = base.extend<Fixtures>({
  // Read when a test runs: the server is started by globalSetup, after the config was loaded.
  // eslint-disable-next-line no-empty-pattern
  env: async ({}, use) => {
    await use(suiteEnv());
  },
  baseURL: async ({ env }, use) => {
    await use(env.baseURL);
  },
  api: async ({ request, env }, use) => {
    await use(await Api.login(request, env.username, env.password));
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
