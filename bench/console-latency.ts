/**
 * The console as an operator feels it, in Chromium at 1M mails: login → rows, Next page → rows, filter
 * change → rows, search keystroke → rows, row click → detail shown. p50 and p95 over `--rounds`
 * rounds of each; goals ≤ 300, ≤ 100, ≤ 100, ≤ 150 and ≤ 100 ms.
 * - Beside each figure, the CPU it cost (median per action): the page's renderer from Chromium's own counters
 *   (CDP Performance.getMetrics: all its tasks, of which script, and style recalculation + layout) and the
 *   server process's (user + system from /proc). On a loaded machine these are steadier than the latencies.
 *
 *   npx tsx bench/console-latency.ts [--engine sqlite|postgres] [--count 1000000] [--rounds 20] [--tag NAME] [--cold]
 *
 * - The BUILT server (`npm run -s build` first: server/dist/main.js serving web/dist) in a child process, on
 *   the store bench/list.ts keeps (bench/support/demo-store.ts: filled once with the demo data, then reused;
 *   pass the same --tag), WORKER=off so nothing changes under the measurement.
 * - Chromium is the system's (/usr/bin/chromium or CHROMIUM_PATH), driven by playwright-core, headless,
 *   1280×800. Clicks and keys are real input events.
 * - Each figure is measured inside the page, from the timestamp (`event.timeStamp`) of the input event that
 *   starts the action (the `click` of a click, as INP counts it: the press before it is the operator's, and
 *   the driver's two round trips; the `keydown` of a key) to the moment the answer is painted: a MutationObserver sees the grid no longer busy and its rows changed as the
 *   action implies (or the drawer's sections), then a task posted from the next animation frame runs after
 *   that frame's style, layout and paint. The driver's round trips are not counted. The moment the DOM held
 *   the answer is printed below each figure: the gap is the browser's rendering work.
 * - Login is clicked once the login page is idle (network quiet, then 500 ms), as after an operator typed the
 *   credentials: a click within milliseconds of the page load shared the 2 cores with the bundle's compile.
 * - The store is read into the kernel's page cache first (bench/support/demo-store.ts `warmDemoStore`): this
 *   machine drops it within minutes, and a new word's first search then read the disk. `--cold` skips it.
 * - Every round asks for something not asked before (another search term, another status), so no answer
 *   comes from the console's cache (staleTime 5 s).
 * - The search box (web/src/features/mails/components/mails-filters.tsx) sends a key typed after a quiet spell
 *   of SEARCH_SEND_AT_ONCE_AFTER_MS at once, and waits SEARCH_DEBOUNCE_MS after the last key of a burst. The
 *   timed keystroke narrows a search the operator has looked at, so it comes after that quiet spell; a key
 *   inside a burst costs SEARCH_DEBOUNCE_MS more than the figure. "search request → rows" is the same sample
 *   measured from the list request's start instead.
 */
import fs from 'node:fs';
import os from 'node:os';
import { chromium, type CDPSession, type Page } from 'playwright-core';
import { printSetup, printTable, summarize, verdict, writeResult, type LatencySummary } from './support/common.js';
import { startBuiltServer } from './support/built-server.js';
import { prepareDemoStore, warmDemoStore } from './support/demo-store.js';
import { engineOption, flagOption, parseBenchArgs, tagOption, wholeNumberOption } from './support/options.js';
import { BENCH_ADMIN } from './support/outbox.js';

const {
  engine,
  count,
  rounds,
  tag,
  cold: isCold,
} = parseBenchArgs({
  engine: engineOption(),
  count: wholeNumberOption(1_000_000),
  rounds: wholeNumberOption(20),
  tag: tagOption(),
  cold: flagOption(),
});
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const GOALS = { login: 300, next: 100, filter: 100, search: 150, detail: 100 } as const;
/** SEARCH_SEND_AT_ONCE_AFTER_MS of web/src/features/mails/components/mails-filters.tsx (another project: not importable here). */
const SEARCH_SEND_AT_ONCE_AFTER_MS = 500;
/** Surnames of the demo data (server/src/demo/demo-words.ts) as they appear in addresses: search terms. */
const TERMS = ['andersen', 'bauer', 'castillo', 'dubois', 'eriksson', 'fischer', 'garcia', 'hoffmann', 'jensen', 'kowalski'];
const MORE_TERMS = ['lopez', 'muller', 'novak', 'obrien', 'petrovic', 'rossi', 'schmidt', 'tanaka', 'usman', 'virtanen', 'weber', 'zhang'];
const STATUS_CHIPS = ['ProviderError', 'ProviderSent', 'Queued', 'Error', 'Dequeued'];

/**
 * In the page: the timestamp of the last click or key, the start of each list request, and `settle(kind,
 * arg)`, which resolves with the time from that input (and from the last list request) to the DOM showing
 * the answer. `snap()` records the rows shown before the action.
 */
const PAGE_HELPERS = String.raw`(() => {
  const w = window;
  w.__lastInput = 0;
  w.__listStarts = [];
  for (const type of ['click', 'keydown']) {
    document.addEventListener(type, (event) => (w.__lastInput = event.timeStamp), true);
  }
  const realFetch = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (url.includes('/api/v1/mail/list')) w.__listStarts.push(performance.now());
    return realFetch(input, init);
  };
  const rowIds = () => [...document.querySelectorAll('#mails-grid tbody tr[data-mail-id]')].map((r) => r.getAttribute('data-mail-id')).join(',');
  // What the list shows: the view (in the query string), the rows in view and the footer's range. Only the rows
  // in view are mounted, and a status filter whose first rows all had that status already leaves them as they
  // were, and a capped search total ("1,000+") as well; the view changed, and its answer is shown once the
  // grid is not busy (an answer from the cache is shown at once).
  const shown = () =>
    location.search + '|' + rowIds() + '|' + (document.querySelector('[data-testid="footer-range"]')?.textContent ?? '');
  let before = '';
  // Whether the grid was busy (a list request in flight) since the action: its answer may leave the rows in
  // view as they were (a status filter whose first rows all had that status already; the body mounts only
  // the rows in view, so this happens), and the grid no longer busy then means the answer is shown.
  let sawBusy = false;
  w.__snap = () => {
    before = shown();
    sawBusy = false;
  };
  const listReady = () => {
    const grid = document.querySelector('#mails-grid');
    if (!grid) return undefined;
    if (grid.getAttribute('aria-busy') !== 'false') {
      sawBusy = true;
      return undefined;
    }
    const rows = [...grid.querySelectorAll('tbody tr[data-mail-id]')];
    const empty = grid.querySelector('tbody tr.empty-row')?.textContent === 'No data to display';
    if (!empty && (rows.length === 0 || (shown() === before && !sawBusy))) return undefined;
    return rows;
  };
  const conditions = {
    rows: () => (listReady()?.length ?? 0) > 0,
    status: (name) => {
      const rows = listReady();
      return rows !== undefined && rows.every((r) => r.querySelector('.td--status')?.textContent?.startsWith(name));
    },
    search: (term) => {
      const rows = listReady();
      return rows !== undefined && rows.every((r) => (r.textContent ?? '').toLowerCase().includes(term));
    },
    detail: (id) => {
      const drawer = document.querySelector('aside.drawer[aria-label="Mail #' + id + '"]');
      return drawer !== null && drawer.querySelector('.drawer__body section') !== null;
    },
  };
  w.__settle = (kind, arg, timeoutMs) =>
    new Promise((resolve, reject) => {
      const check = conditions[kind];
      // The DOM holding the answer is not yet the operator seeing it: style, layout and paint of that frame
      // follow (100+ ms for a page of rows laid out whole). A task posted from requestAnimationFrame runs
      // after the frame's rendering, so that is when the answer is on screen.
      const finish = () => {
        const inDom = performance.now();
        const lastStart = w.__listStarts.at(-1);
        observer.disconnect();
        clearTimeout(timer);
        requestAnimationFrame(() =>
          setTimeout(() => {
            const now = performance.now();
            resolve({
              fromInput: now - w.__lastInput,
              fromRequest: lastStart !== undefined && lastStart >= w.__lastInput ? now - lastStart : null,
              domFromInput: inDom - w.__lastInput,
            });
          }, 0),
        );
      };
      const observer = new MutationObserver(() => {
        if (check(arg)) finish();
      });
      const timer = setTimeout(() => {
        observer.disconnect();
        reject(new Error(kind + '(' + arg + ') not shown within ' + timeoutMs + ' ms'));
      }, timeoutMs);
      observer.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
      if (check(arg)) finish();
    });
})();`;

/** fromInput and fromRequest end when the answer is painted; domFromInput when the DOM held it. */
type Settled = { fromInput: number; fromRequest: number | null; domFromInput: number };
/** CPU milliseconds an action cost: the renderer's tasks (of which script, style + layout) and the server's. */
type CpuCost = { rendererTask: number; rendererScript: number; rendererLayout: number; server: number };
type Measured = Settled & { cpu: CpuCost };

/** The server's user + system CPU in ms, from /proc (clock ticks of 10 ms). */
function serverCpuMs(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** The renderer's cumulative task, script and style + layout time in ms (CDP Performance.getMetrics). */
async function rendererCpuMs(cdp: CDPSession) {
  const { metrics } = await cdp.send('Performance.getMetrics');
  const value = (name: string) => (metrics.find((metric) => metric.name === name)?.value ?? 0) * 1000;
  return { task: value('TaskDuration'), script: value('ScriptDuration'), layout: value('LayoutDuration') + value('RecalcStyleDuration') };
}

/** What a measurement needs besides the page: its CDP session and the server's pid, for the CPU figures. */
interface Probe {
  cdp: CDPSession;
  serverPid: number | undefined;
}

/** Starts waiting for `kind` before the action, so no mutation is missed, then runs the action. */
async function measure(page: Page, probe: Probe, kind: string, arg: string, action: () => Promise<void>): Promise<Measured> {
  await page.evaluate('window.__snap()');
  const rendererBefore = await rendererCpuMs(probe.cdp);
  const serverBefore = serverCpuMs(probe.serverPid);
  const settled = page.evaluate(`window.__settle(${JSON.stringify(kind)}, ${JSON.stringify(arg)}, 30000)`) as Promise<Settled>;
  await action();
  const answer = await settled;
  const rendererAfter = await rendererCpuMs(probe.cdp);
  return {
    ...answer,
    cpu: {
      rendererTask: rendererAfter.task - rendererBefore.task,
      rendererScript: rendererAfter.script - rendererBefore.script,
      rendererLayout: rendererAfter.layout - rendererBefore.layout,
      server: serverCpuMs(probe.serverPid) - serverBefore,
    },
  };
}

async function main(): Promise<void> {
  const store = await prepareDemoStore({ engine, count, tag });
  const setup = printSetup('Console latency in Chromium: login → rows, filter change → rows, search keystroke → rows, row click → detail', {
    engine,
    count,
    rounds,
    server: 'server/dist/main.js (child process, WORKER=off)',
    store: isCold ? 'as the kernel left it (--cold)' : 'read into the page cache first',
    browser: `${chromiumPath} headless via playwright-core, 1280×800`,
  });

  if (!isCold) await warmDemoStore(engine, store.dataDir, store.databaseUrl);
  const server = await startBuiltServer(store.dataDir, store.databaseUrl);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
  });
  const samples = {
    login: [] as number[],
    next: [] as number[],
    nextDom: [] as number[],
    filter: [] as number[],
    search: [] as number[],
    searchRequest: [] as number[],
    detail: [] as number[],
    loginDom: [] as number[],
    filterDom: [] as number[],
    searchDom: [] as number[],
    detailDom: [] as number[],
  };
  /** CPU per action, by the sample's name. */
  const cpu: Record<'login' | 'next' | 'filter' | 'search' | 'detail', CpuCost[]> = {
    login: [],
    next: [],
    filter: [],
    search: [],
    detail: [],
  };
  try {
    const newPage = async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: server.baseUrl });
      await context.addInitScript({ content: PAGE_HELPERS });
      const page = await context.newPage();
      const probe: Probe = { cdp: await context.newCDPSession(page), serverPid: server.pid };
      await probe.cdp.send('Performance.enable');
      await page.goto('/');
      await page.getByLabel('Username', { exact: true }).fill(BENCH_ADMIN.username);
      await page.getByLabel('Password', { exact: true }).fill(BENCH_ADMIN.password);
      await page.waitForLoadState('networkidle');
      await page.waitForTimeout(500);
      return { context, page, probe };
    };
    // One warm-up login (the server's first queries, Chromium's first page), not counted.
    const warm = await newPage();
    await measure(warm.page, warm.probe, 'rows', '', () => warm.page.getByRole('button', { name: 'Login', exact: true }).click());
    await warm.context.close();

    for (let i = 0; i < rounds; i++) {
      const { context, page, probe } = await newPage();
      const login = await measure(page, probe, 'rows', '', () => page.getByRole('button', { name: 'Login', exact: true }).click());
      samples.login.push(login.fromInput);
      samples.loginDom.push(login.domFromInput);
      cpu.login.push(login.cpu);

      // Next page: the second page of the whole list, then back to the first (untimed).
      const next = await measure(page, probe, 'rows', '', () => page.getByRole('button', { name: 'Next', exact: true }).click());
      samples.next.push(next.fromInput);
      samples.nextDom.push(next.domFromInput);
      cpu.next.push(next.cpu);
      await measure(page, probe, 'rows', '', () => page.getByRole('button', { name: 'First', exact: true }).click());

      // Filter change: a status chip on a search not asked before (the search itself is set untimed).
      const search = page.getByRole('searchbox', { name: 'Search sender, recipients and subject' });
      const term = [...TERMS, ...MORE_TERMS][i % (TERMS.length + MORE_TERMS.length)]!;
      await measure(page, probe, 'search', term, () => search.fill(term));
      const typedAt = Date.now();
      const chip = STATUS_CHIPS[i % STATUS_CHIPS.length]!;
      const filter = await measure(page, probe, 'status', chip, () =>
        page.getByRole('button', { name: new RegExp(`^${chip}\\b`) }).click(),
      );
      samples.filter.push(filter.fromInput);
      samples.filterDom.push(filter.domFromInput);
      cpu.filter.push(filter.cpu);
      await measure(page, probe, 'rows', '', () => page.getByRole('button', { name: new RegExp(`^${chip}\\b`) }).click());

      // Search keystroke: one more character narrows the search (surname → surname + digit), typed after the
      // operator looked at the list: at least SEARCH_SEND_AT_ONCE_AFTER_MS since the box last changed, so it
      // is sent at once. A key inside a burst waits SEARCH_DEBOUNCE_MS more (see the header).
      await page.waitForTimeout(Math.max(0, SEARCH_SEND_AT_ONCE_AFTER_MS - (Date.now() - typedAt)));
      const narrowed = `${term}${i % 10}`;
      const keystroke = await measure(page, probe, 'search', narrowed, () => search.press(String(i % 10)));
      samples.search.push(keystroke.fromInput);
      samples.searchDom.push(keystroke.domFromInput);
      cpu.search.push(keystroke.cpu);
      if (keystroke.fromRequest !== null) samples.searchRequest.push(keystroke.fromRequest);

      // Row click → detail: a different row each round, of the whole list (Esc clears the search, untimed).
      await measure(page, probe, 'rows', '', () => search.press('Escape'));
      const row = page.locator('#mails-grid tbody tr[data-mail-id]').nth(i % 10);
      const id = (await row.getAttribute('data-mail-id'))!;
      const detail = await measure(page, probe, 'detail', id, () => row.locator('.td--subject').click());
      samples.detail.push(detail.fromInput);
      samples.detailDom.push(detail.domFromInput);
      cpu.detail.push(detail.cpu);
      await context.close();
      console.log(
        `  round ${i + 1}: login ${login.fromInput.toFixed(0)} ms, next ${next.fromInput.toFixed(0)} ms, filter ${filter.fromInput.toFixed(0)} ms, keystroke ${keystroke.fromInput.toFixed(0)} ms (request ${keystroke.fromRequest?.toFixed(0) ?? '?'} ms), detail ${detail.fromInput.toFixed(0)} ms; load ${os.loadavg()[0]!.toFixed(2)}`,
      );
    }
  } finally {
    await browser.close();
    await server.stop();
  }

  const summaries: Record<string, LatencySummary> = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
  const rows: Array<[string, keyof typeof samples, number | undefined]> = [
    ['login → rows', 'login', GOALS.login],
    ['  in the DOM, before layout and paint', 'loginDom', undefined],
    ['Next page → rows', 'next', GOALS.next],
    ['  in the DOM, before layout and paint', 'nextDom', undefined],
    ['filter change → rows', 'filter', GOALS.filter],
    ['  in the DOM, before layout and paint', 'filterDom', undefined],
    ['search keystroke → rows (incl. debounce)', 'search', GOALS.search],
    ['  in the DOM, before layout and paint', 'searchDom', undefined],
    ['  search request → rows', 'searchRequest', undefined],
    ['row click → detail shown', 'detail', GOALS.detail],
    ['  in the DOM, before layout and paint', 'detailDom', undefined],
  ];
  console.log('');
  printTable(
    ['measure', 'n', 'p50 ms', 'p95 ms', 'max ms', 'goal'],
    rows.map(([label, key, goal]) => {
      const s = summaries[key]!;
      return [label, s.count, s.p50, s.p95, s.max, goal === undefined ? '' : `≤ ${goal}: ${verdict(s.p95 <= goal)} (p95)`];
    }),
  );
  // CPU per action, median: the renderer's tasks, of which script and style + layout, and the server's.
  const median = (values: number[]) => summarize(values.filter(Number.isFinite)).p50;
  const cpuSummaries = Object.fromEntries(
    Object.entries(cpu).map(([action, costs]) => [
      action,
      {
        rendererTask: median(costs.map((c) => c.rendererTask)),
        rendererScript: median(costs.map((c) => c.rendererScript)),
        rendererLayout: median(costs.map((c) => c.rendererLayout)),
        server: median(costs.map((c) => c.server)),
      },
    ]),
  );
  console.log('');
  printTable(
    ['CPU per action, median', 'renderer ms', 'of which script', 'style + layout', 'server ms'],
    Object.entries(cpuSummaries).map(([action, c]) => [action, c.rendererTask, c.rendererScript, c.rendererLayout, c.server]),
  );
  console.log(
    `load average after: ${os
      .loadavg()
      .map((v) => v.toFixed(2))
      .join('/')}`,
  );
  console.log(`written: ${writeResult('console-latency', setup, { summaries, samples, cpu: cpuSummaries, loadAfter: os.loadavg() })}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
