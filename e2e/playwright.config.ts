/**
 * Browser end-to-end suite of the console (docs/console.md), against the built server with real data.
 * Run from the repository root: `npm run -s build && npx playwright test --config e2e/playwright.config.ts`.
 * `npm test` (scripts/test.mjs) passes `--reporter=list,json`, which replaces the reporter below.
 */
import { defineConfig } from '@playwright/test';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './specs',
  outputDir: './test-results',
  // The tests change the server's data (dequeue, delete): one worker, files and tests in order.
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: Boolean(process.env.CI),
  timeout: 30_000,
  expect: { timeout: 5_000 },
  reporter: 'list',
  globalSetup: './global-setup.ts',
  use: {
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    colorScheme: 'light',
    locale: 'en-GB',
    actionTimeout: 5_000,
    navigationTimeout: 10_000,
    // Traces cost about a quarter of the run time; ask for them with `--trace retain-on-failure`.
    trace: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      // The system's Chromium; the suite never downloads a browser.
      executablePath: chromiumPath,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
