/**
 * The suite's `test`: every test gets its worker's server's address as baseURL, an API client logged in as
 * the operator (`api`), the console's API traffic (`traffic`), the console page object (`app`) and `alerts`,
 * which accepts every window.alert and fails the test if one appears that the test did not expect.
 *
 * Each Playwright worker starts a server of its own (`suiteServer`, worker-scoped), so the workers' tests
 * never change each other's data; a worker's files run one after another on its server, as they did when the
 * whole suite shared one.
 */
import { test as base, expect, type BrowserContext, type BrowserContextOptions, type Dialog, type Page } from '@playwright/test';
import { Api } from './api';
import { ConsolePage, logOutInApp } from './console';
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
  readonly listener = (dialog: Dialog) => this.handle(dialog);

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
  /**
   * true: the test's page lives in a browser context of its own, made for it and closed after it (Playwright's
   * default), rather than in a context its worker shares (see `context` below). For a test that measures what a
   * cold browser fetches (specs/static.spec.ts).
   */
  ownContext: boolean;
  /**
   * true: the test may be given the page the worker's previous test left, if that test said so too, passed, and
   * its page could be logged out in-app (see `page` below), instead of a new page that loads the console again.
   * For the specs whose tests each start with `app.open()` or `app.login()` and leave the page's own settings
   * alone apart from what `page` resets.
   */
  reusePage: boolean;
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
   * The operator's session for `api`, one per worker: a login hashes the password with argon2id on purpose,
   * and most tests want an API client beside the console, not a login.
   * Tests that need a session of their own log in (the console's `app.login()`, or Api.login).
   */
  operatorToken: string;
  /** The worker's browser contexts, one per set of context options its tests ask for (see `context` below). */
  sharedContexts: Map<string, SharedContext>;
}

interface SharedContext {
  context: BrowserContext;
  /** A page that stays on the server's /healthz (no script) so that the console's renderer process stays warm. */
  keeper: Page | null;
  /** Every http(s) origin a page of the context has been on: the ones whose storage a reset clears. */
  origins: Set<string>;
  /** The page a `reusePage` test left on the console's login view for the next such test (see `page`). */
  reusable: Page | null;
}

/** The pages handed to a test on the console's login view, logged out there by the test before. */
const reusedPages = new WeakSet<Page>();

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
  sharedContexts: [
    // eslint-disable-next-line no-empty-pattern
    async ({}, use) => {
      const contexts = new Map<string, SharedContext>();
      await use(contexts);
      for (const { context } of contexts.values()) await context.close();
    },
    { scope: 'worker' },
  ],
  ownContext: [false, { option: true }],
  reusePage: [false, { option: true }],
  /**
   * The test's browser context. Playwright's default, a context per test, costs Chromium about a second of CPU
   * per test on this suite: a new context's page gets a renderer process of its own, which compiles the
   * console's script and draws its first list cold, and every context's close takes a screenshot (kept only on
   * a failure, `screenshot: 'only-on-failure'`). So a worker keeps a context per set of options (the suite's
   * defaults, or e.g. cells.spec's time zone), with a keeper page on the server's /healthz (a JSON document, no
   * script): Chromium puts the test's page on the same site in the keeper's renderer process, already warm.
   * Each test still gets a new page (the built-in `page` fixture), in a context reset to what a new one holds:
   * no other page, cookies, permissions, context routes or offline mode; no HTTP cache; and on every origin a
   * page has been on no localStorage (the table's layout lives there), IndexedDB, service workers or caches
   * (CDP Storage.clearDataForOrigin: `setStorageState` does the same through a page of its own, ~0.15 s of CPU
   * more per test); and the test's timeouts. After the test its pages are closed; after a failure the keeper is
   * closed instead (the next test opens another), so that Playwright's error context snapshots the test's page.
   */
  context: async (
    {
      browser,
      sharedContexts,
      ownContext,
      reusePage,
      baseURL,
      viewport,
      colorScheme,
      locale,
      timezoneId,
      contextOptions,
      actionTimeout,
      navigationTimeout,
    },
    use,
    testInfo,
  ) => {
    const options: BrowserContextOptions = { ...contextOptions, baseURL, viewport, colorScheme, locale, timezoneId };
    if (ownContext) {
      const context = await browser.newContext(options);
      await use(context);
      await context.close();
      return;
    }
    const key = JSON.stringify(options);
    let shared = sharedContexts.get(key);
    if (shared) {
      const { context, keeper, origins } = shared;
      if (!reusePage) shared.reusable = null;
      for (const page of context.pages()) if (page !== keeper && page !== shared.reusable) await page.close();
      await context.clearCookies();
      await context.clearPermissions();
      await context.unrouteAll();
      await context.setOffline(false);
      if (keeper) {
        const cdp = await keeper.context().newCDPSession(keeper);
        await cdp.send('Network.clearBrowserCache');
        for (const origin of origins) await cdp.send('Storage.clearDataForOrigin', { origin, storageTypes: 'all' });
        await cdp.detach();
      } else {
        await context.setStorageState({ cookies: [], origins: [] });
      }
    } else {
      shared = { context: await browser.newContext(options), keeper: null, origins: new Set(), reusable: null };
      const { origins } = shared;
      shared.context.on('page', (page) =>
        page.on('framenavigated', (frame) => {
          if (/^https?:/.test(frame.url())) origins.add(new URL(frame.url()).origin);
        }),
      );
      sharedContexts.set(key, shared);
    }
    const { context } = shared;
    if (!shared.keeper && baseURL) {
      shared.keeper = await context.newPage();
      await shared.keeper.goto('/healthz');
    }
    context.setDefaultTimeout(actionTimeout ?? 0);
    context.setDefaultNavigationTimeout(navigationTimeout ?? 0);
    await use(context);
    if (testInfo.status === testInfo.expectedStatus) {
      for (const page of context.pages()) if (page !== shared.keeper && page !== shared.reusable) await page.close();
    } else {
      await shared.keeper?.close();
      shared.keeper = null;
    }
  },
  /**
   * The test's page: a new one, or with `reusePage` the page the previous such test left on the login view. A new
   * page costs Chromium about 0.6 s of CPU more than an in-app Logout and login on one (loading the console,
   * compiling its script, drawing the login view: 20 logins on new pages 20.5 CPU-s, on one page 8.1, a browser's
   * start included in both). The page is handed over as a new one would be: the context reset above (storage,
   * cookies, cache), no page routes or listeners of the test before, the test's viewport and colour scheme, the
   * mouse at the corner, no sessionStorage; and the console's own Logout has ended that test's session, which
   * leaves the view out of the address and the next list view to be built from nothing (a new token), with the
   * column layout read again from the cleared localStorage. A test that failed, or that ended elsewhere than on the
   * console's list or fresh login view (another page, a modal panel open), leaves no page: the next gets a new one.
   */
  page: async ({ context, sharedContexts, reusePage, baseURL, viewport, colorScheme }, use, testInfo) => {
    const shared = [...sharedContexts.values()].find((entry) => entry.context === context);
    let page = reusePage ? shared?.reusable : null;
    if (shared) shared.reusable = null;
    if (page && !page.isClosed()) {
      await page.unrouteAll({ behavior: 'ignoreErrors' });
      if (viewport) await page.setViewportSize(viewport);
      await page.emulateMedia({ media: null, colorScheme: colorScheme ?? null });
      await page.mouse.move(0, 0);
      await page.evaluate(() => window.sessionStorage.clear());
      reusedPages.add(page);
    } else {
      page = await context.newPage();
    }
    await use(page);
    reusedPages.delete(page);
    if (shared && reusePage && baseURL && testInfo.status === 'passed' && (await logOutInApp(page, baseURL).catch(() => false))) {
      shared.reusable = page;
    }
  },
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
    const traffic = new Traffic(page);
    await use(traffic);
    traffic.dispose();
  },
  alerts: [
    async ({ page }, use) => {
      const alerts = new Alerts();
      page.on('dialog', alerts.listener);
      await use(alerts);
      page.off('dialog', alerts.listener);
      expect(alerts.unexpected, 'dialogs the test did not expect').toEqual([]);
    },
    { auto: true },
  ],
  app: async ({ page, traffic, env }, use) => {
    await use(new ConsolePage(page, traffic, env, reusedPages.has(page)));
  },
});

export { expect };
