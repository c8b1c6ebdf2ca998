/**
 * The Overview as an operator opens it, in Chromium, on the demo store of `--count` mails (1M by default) with
 * `--apps` applications and `--days` days of hourly statistics: from the click on "Overview" to its first chart
 * drawn (goal ≤ 300 ms), p50 and p95 over `--rounds` rounds, each in a new browser context (the Overview's chunk
 * fetched cold, as at a session's first open) after a login whose list is shown.
 *
 *   npx tsx bench/overview-latency.ts [--engine sqlite|postgres] [--count 1000000] [--tag NAME] [--rounds 10] [--apps 100] [--days 30]
 *
 * - The store is bench/list.ts's kept demo store (bench/support/demo-store.ts, the same --tag), COPIED before
 *   anything is written (SQLite: its folder; PostgreSQL: `create database … template …`), so the kept one stays as
 *   filled. The copy gets the applications (API keys) and their statistics (bench/support/statistics.ts, as
 *   bench/stats.ts fills them: the demo data counts its own mails only under no application), then is removed.
 * - The BUILT server (`npm run -s build` first) in a child process, WORKER=off (bench/support/built-server.ts).
 * - Measured inside the page: from the click's `event.timeStamp` to the console's own mark of the first chart
 *   drawn on its canvas (`outbox:overview-first-chart`, uPlot's draw hook), and to the frame after it painted (a
 *   task posted from the next animation frame). Beside it, the CPU of the open: the renderer's (CDP
 *   Performance.getMetrics) and the server's (/proc), so a loaded machine's figures can be read.
 */
import fs from 'node:fs';
import os from 'node:os';
import { chromium, type CDPSession } from 'playwright-core';
import { createAuthService } from '../server/src/auth/auth.service.js';
import { systemClock } from '../server/src/clock.js';
import { HOUR_MS } from '../server/src/statistics/statistics-moves.js';
import { openStore } from '../server/src/store/connection.js';
import { startBuiltServer } from './support/built-server.js';
import { cpuTimeMs, makeTempDir, printSetup, printTable, removeDir, summarize, verdict, writeResult } from './support/common.js';
import { prepareDemoStore } from './support/demo-store.js';
import { engineOption, parseBenchArgs, tagOption, wholeNumberOption } from './support/options.js';
import { BENCH_ADMIN } from './support/outbox.js';
import { copyDatabase } from './support/postgres.js';
import { fillCounters } from './support/statistics.js';

const { engine, count, tag, rounds, apps, days } = parseBenchArgs({
  engine: engineOption(),
  count: wholeNumberOption(1_000_000),
  tag: tagOption(),
  rounds: wholeNumberOption(10),
  apps: wholeNumberOption(100),
  days: wholeNumberOption(30),
});
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const GOAL_MS = 300;

/** In the page: the last click's timestamp, and when the first chart's mark came and the frame after it painted. */
const PAGE_HELPERS = String.raw`(() => {
  const w = window;
  w.__lastClick = 0;
  document.addEventListener('click', (event) => (w.__lastClick = event.timeStamp), true);
  w.__firstChart = new Promise((resolve) => {
    new PerformanceObserver((list, observer) => {
      const mark = list.getEntriesByName('outbox:overview-first-chart')[0];
      if (!mark) return;
      observer.disconnect();
      requestAnimationFrame(() => setTimeout(() => resolve({ drawn: mark.startTime - w.__lastClick, painted: performance.now() - w.__lastClick }), 0));
    }).observe({ type: 'mark', buffered: true });
  });
})();`;

async function main(): Promise<void> {
  const kept = await prepareDemoStore({ engine, count, tag });
  const setup = printSetup('Overview: click → first chart drawn, in Chromium', {
    engine,
    count,
    rounds,
    apps,
    days,
    server: 'server/dist/main.js (child process, WORKER=off)',
    browser: `${chromiumPath} headless via playwright-core, 1440×900`,
  });

  // A copy of the kept store: the applications and statistics written below must not stay in it.
  const dataDir = makeTempDir('outbox-bench-overview-');
  let databaseUrl: string | undefined;
  let dropCopy: (() => Promise<void>) | undefined;
  if (engine === 'postgres') {
    const copy = await copyDatabase(new URL(kept.databaseUrl!).pathname.slice(1), 'overview');
    databaseUrl = copy.url;
    dropCopy = copy.drop;
  } else {
    fs.cpSync(kept.dataDir, dataDir, { recursive: true });
  }
  try {
    const store = await openStore({ dataDir, databaseUrl });
    try {
      const auth = createAuthService({ store, clock: systemClock, sessionTtlSeconds: 3600 });
      const ids: number[] = [];
      for (let i = 0; i < apps; i++) ids.push((await auth.findApiKeyPrincipal(await auth.createApiKey(`overview-${i}`)))!.id);
      const end = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + HOUR_MS;
      const rows = await fillCounters(store, ids, end - days * 24 * HOUR_MS, end);
      console.log(`statistics: ${rows.toLocaleString('en-US')} hourly rows for ${apps} applications over ${days} days`);
    } finally {
      await store.close();
    }

    const server = await startBuiltServer(dataDir, databaseUrl);
    const browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
    });
    const drawn: number[] = [];
    const painted: number[] = [];
    const rendererCpu: number[] = [];
    const serverCpu: number[] = [];
    try {
      for (let round = 0; round < rounds + 1; round++) {
        const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, baseURL: server.baseUrl });
        await context.addInitScript({ content: PAGE_HELPERS });
        const page = await context.newPage();
        const cdp = await context.newCDPSession(page);
        await cdp.send('Performance.enable');
        await page.goto('/');
        await page.getByLabel('Username', { exact: true }).fill(BENCH_ADMIN.username);
        await page.getByLabel('Password', { exact: true }).fill(BENCH_ADMIN.password);
        await page.getByRole('button', { name: 'Login', exact: true }).click();
        await page.locator('#mails-grid tbody tr[data-mail-id]').first().waitFor();
        // As an operator would: the list looked at before the Overview is asked for.
        await page.waitForLoadState('networkidle');
        await page.waitForTimeout(500);
        const taskBefore = await taskMs(cdp);
        const serverBefore = cpuTimeMs(server.pid);
        await page.getByRole('button', { name: 'Overview', exact: true }).click();
        const first = (await page.evaluate('window.__firstChart')) as { drawn: number; painted: number };
        const taskAfter = await taskMs(cdp);
        const serverAfter = cpuTimeMs(server.pid);
        await context.close();
        if (round === 0) continue; // the server's first statistics call and Chromium's first page: not counted
        drawn.push(first.drawn);
        painted.push(first.painted);
        rendererCpu.push(taskAfter - taskBefore);
        serverCpu.push(serverBefore === undefined || serverAfter === undefined ? NaN : serverAfter - serverBefore);
        console.log(
          `  round ${round}: drawn ${first.drawn.toFixed(0)} ms, painted ${first.painted.toFixed(0)} ms after the click; load ${os.loadavg()[0]!.toFixed(2)}`,
        );
      }
    } finally {
      await browser.close();
      await server.stop();
    }
    const summaries = {
      drawn: summarize(drawn),
      painted: summarize(painted),
      rendererCpu: summarize(rendererCpu),
      serverCpu: summarize(serverCpu),
    };
    console.log('');
    printTable(
      ['measure', 'n', 'p50 ms', 'p95 ms', 'max ms', 'goal'],
      [
        [
          'click → first chart drawn',
          summaries.drawn.count,
          summaries.drawn.p50,
          summaries.drawn.p95,
          summaries.drawn.max,
          `≤ ${GOAL_MS}: ${verdict(summaries.drawn.p95 <= GOAL_MS)} (p95)`,
        ],
        ['click → that frame painted', summaries.painted.count, summaries.painted.p50, summaries.painted.p95, summaries.painted.max, ''],
        [
          '  renderer CPU (until painted)',
          summaries.rendererCpu.count,
          summaries.rendererCpu.p50,
          summaries.rendererCpu.p95,
          summaries.rendererCpu.max,
          '',
        ],
        [
          '  server CPU (until painted)',
          summaries.serverCpu.count,
          summaries.serverCpu.p50,
          summaries.serverCpu.p95,
          summaries.serverCpu.max,
          '',
        ],
      ],
    );
    console.log(
      `load average after: ${os
        .loadavg()
        .map((v) => v.toFixed(2))
        .join('/')}`,
    );
    console.log(
      `written: ${writeResult('overview-latency', setup, { summaries, drawn, painted, rendererCpu, serverCpu, loadAfter: os.loadavg() })}`,
    );
  } finally {
    removeDir(dataDir);
    await dropCopy?.();
  }
}

/** The renderer's cumulative task time in ms (CDP Performance.getMetrics). */
async function taskMs(cdp: CDPSession): Promise<number> {
  const { metrics } = await cdp.send('Performance.getMetrics');
  return (metrics.find((metric) => metric.name === 'TaskDuration')?.value ?? 0) * 1000;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
