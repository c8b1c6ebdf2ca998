#!/usr/bin/env node
// `npm test`: every check of the project, with one summary line at the end. On two cores it runs in two phases:
//   1. typecheck, lint and the build for e2e side by side (each mostly one core of compute, no tests to slow);
//   2. three lanes at once: the browser e2e suite (on the build of phase 1), the server suite on PostgreSQL,
//      and the server suite on SQLite followed by the console's component tests.
// Most test files spend their time waiting (on sockets, timers, child processes, PostgreSQL), so each vitest
// run takes several files at once (testWorkers below) rather than vitest's default of one file per core but
// one: on two cores that default ran every file of a half one after another, with a third of the CPU idle.
// Each step's output is kept in a file and printed whole when the step ends, so the lanes do not interleave.
// The PostgreSQL half runs whenever a server answers (OUTBOX_TEST_POSTGRES_URL, default
// postgres://postgres@127.0.0.1:5432/postgres); the browser half whenever a Chromium is found (CHROMIUM_PATH,
// default /usr/bin/chromium). Elsewhere each skips with a message saying how to get it, except in CI (CI=true),
// where a missing one fails the run: a test skipped in CI is a test not written.
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const isCI = process.env.CI === 'true' || process.env.CI === '1';
const only = process.argv.slice(2); // e.g. `npm test -- server web`
const reportDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outbox-test-report-'));
const totals = { passed: 0, failed: 0, skipped: 0 };
const problems = [];
/** Each failed test: step, file, name and the first lines of its message, repeated at the end of the run. */
const failures = [];
/** Each browser test that failed and then passed on its retry (CI only): it passes, and is named at the end. */
const flaky = [];
/** Per step: its wall time, and its test counts where it runs tests (the closing summary's table). */
const steps = [];

const wanted = (name) => only.length === 0 || only.includes(name);

/** Adds a step's test counts to the totals and to its line of the summary. */
function count(title, counts) {
  for (const key of Object.keys(totals)) totals[key] += counts[key];
  const step = steps.find((s) => s.title === title);
  if (step) step.counts = counts;
}

/** The first lines of a failure's message, without colour codes: enough to tell a timeout from a wrong value. */
const firstLines = (message) =>
  String(message ?? '')
    .replace(/\u001b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(0, 4)
    .map((line) => line.slice(0, 240));

function countVitest(title, file) {
  if (!fs.existsSync(file)) return;
  const report = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const result of report.testResults ?? []) {
    const where = path.relative(root, result.name);
    const failed = (result.assertionResults ?? []).filter((test) => test.status === 'failed');
    for (const test of failed) failures.push({ title, where, name: test.fullName, message: firstLines(test.failureMessages?.[0]) });
    // A file that failed outside any test (an import, a hook) has no failed test to name.
    if (failed.length === 0 && result.status === 'failed')
      failures.push({ title, where, name: '(the file)', message: firstLines(result.message) });
  }
  count(title, {
    passed: report.numPassedTests ?? 0,
    failed: report.numFailedTests ?? 0,
    skipped: (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0),
  });
}

function countPlaywright(title, file) {
  if (!fs.existsSync(file)) return;
  const { stats, suites } = JSON.parse(fs.readFileSync(file, 'utf8'));
  const walk = (suite, names) => {
    for (const spec of suite.specs ?? [])
      for (const test of spec.tests ?? []) {
        // A flaky test's first run failed; an unexpected one's every run did (its last is reported).
        const failedRun = test.status === 'flaky' ? test.results?.[0] : test.status === 'unexpected' ? test.results?.at(-1) : undefined;
        if (failedRun === undefined) continue;
        (test.status === 'flaky' ? flaky : failures).push({
          title,
          where: `${spec.file}:${spec.line}`,
          name: [...names, spec.title].join(' › '),
          message: firstLines(failedRun.error?.message),
        });
      }
    for (const child of suite.suites ?? []) walk(child, [...names, child.title]);
  };
  for (const suite of suites ?? []) walk(suite, []);
  count(title, { passed: (stats.expected ?? 0) + (stats.flaky ?? 0), failed: stats.unexpected ?? 0, skipped: stats.skipped ?? 0 });
}

function skip(what, how) {
  const message = `${what} skipped: ${how}`;
  if (isCI) problems.push(`${what} cannot run in CI: ${how}`);
  console.log(`\n⚠ ${message}`);
}

function canConnect(urlText) {
  const url = new URL(urlText);
  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || 5432) });
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Runs one step in a child process, its output kept in a file and printed when it ends; resolves true when it
 * passed. Never spawnSync: a step that blocked this process's event loop would hold back the end of every
 * step beside it, and their times in the summary with it.
 */
function runStep(title, command, args, options = {}) {
  const started = Date.now();
  const logFile = path.join(reportDir, `${title.replace(/\W+/g, '-')}.log`);
  const output = fs.openSync(logFile, 'w');
  console.log(`━━ ${title}: started, its output follows when it ends`);
  const child = spawn(command, args, { cwd: root, stdio: ['ignore', output, output], env: { ...process.env, ...options.env } });
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      fs.closeSync(output);
      console.log(`\n━━ ${title} ━━`);
      process.stdout.write(fs.readFileSync(logFile));
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      steps.push({ title, seconds });
      if (code !== 0) problems.push(`${title} failed (exit ${code ?? signal}, ${seconds}s)`);
      else console.log(`✔ ${title} (${seconds}s)`);
      resolve(code === 0);
    });
  });
}

const vitestArgs = (workspace, file) => [
  'vitest',
  'run',
  '--root',
  workspace,
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${file}`,
];

/**
 * Test files run at once per vitest run: one and a half per core (at least two), or OUTBOX_TEST_WORKERS. The
 * files wait far more than they compute, and every test is written to pass on a loaded machine.
 */
const testWorkers = Number(process.env.OUTBOX_TEST_WORKERS) || Math.max(2, Math.ceil(os.availableParallelism() * 1.5));

const vitest = async (workspace, name, env = {}) => {
  const file = path.join(reportDir, `${name}.json`);
  const ok = await runStep(`${name} tests`, 'npx', [...vitestArgs(workspace, file), `--maxWorkers=${testWorkers}`], { env });
  countVitest(`${name} tests`, file);
  return ok;
};

/**
 * What `npm run build` reads: the console's and the server's sources and build settings, the contract, and the
 * lockfile. Their hash is kept beside the build (buildHashFile) once a build passed.
 */
const buildInputs = [
  'web/src',
  'web/index.html',
  'web/vite.config.ts',
  'web/package.json',
  'server/src',
  'server/build.mjs',
  'server/package.json',
  'contract/src',
  'contract/package.json',
  'package-lock.json',
];
const buildOutputs = ['web/dist/index.html', 'server/dist/main.js', 'server/dist/cli.js'];
const buildHashFile = path.join(root, 'node_modules/.cache/outbox-build/inputs.sha256');

function hashBuildInputs() {
  const hash = crypto.createHash('sha256');
  const add = (relative) => {
    const full = path.join(root, relative);
    if (!fs.existsSync(full)) return;
    if (fs.statSync(full).isDirectory()) {
      for (const name of fs.readdirSync(full).sort()) add(path.join(relative, name));
      return;
    }
    hash.update(`${relative}\0`).update(fs.readFileSync(full)).update('\0');
  };
  for (const input of buildInputs) add(input);
  return hash.digest('hex');
}

/** The build's outputs as they are on disk: a build run by hand since (`npm run build`) changes them. */
const outputsStamp = () =>
  buildOutputs
    .map((file) => (fs.existsSync(path.join(root, file)) ? `${file}@${fs.statSync(path.join(root, file)).mtimeMs}` : `${file}@none`))
    .join(' ');

/**
 * The build for the browser suite, skipped when its inputs are what the last passing build here read and its
 * outputs are still that build's: a rerun after a change to tests alone does not build the console again (about
 * a minute of CPU on two cores). A fresh clone always builds.
 */
async function buildForE2e() {
  const stamp = `${hashBuildInputs()} ${outputsStamp()}`;
  if (fs.existsSync(buildHashFile) && fs.readFileSync(buildHashFile, 'utf8') === stamp) {
    console.log('━━ build for e2e: skipped, its inputs are those of the build in web/dist and server/dist');
    return true;
  }
  fs.rmSync(buildHashFile, { force: true });
  const inputs = hashBuildInputs();
  const ok = await runStep('build for e2e', 'npm', ['run', '-s', 'build']);
  if (ok) {
    fs.mkdirSync(path.dirname(buildHashFile), { recursive: true });
    fs.writeFileSync(buildHashFile, `${inputs} ${outputsStamp()}`);
  }
  return ok;
}

const runStarted = Date.now();
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const e2eRuns = wanted('e2e') && fs.existsSync(chromium);

// Phase 1: no tests yet, so nothing timing-sensitive is slowed by the three sharing the cores.
const phaseOne = [];
if (wanted('typecheck')) phaseOne.push(runStep('typecheck', 'npx', ['tsc', '-b', 'tsconfig.json']));
if (wanted('lint')) phaseOne.push(runStep('lint (architecture, style, formatting)', 'npm', ['run', '-s', 'lint']));
const built = e2eRuns ? buildForE2e() : Promise.resolve(false);
phaseOne.push(built);
await Promise.all(phaseOne);

// Phase 2: three lanes at once. The browser suite is the longest single step (two Playwright workers, each
// with its own server and its files in order), so it starts first.
const lanes = [];
if (wanted('e2e')) {
  if (!e2eRuns)
    skip('The browser e2e suite', `no Chromium at ${chromium}. Install Debian's package (apt-get install chromium) or set CHROMIUM_PATH.`);
  else
    lanes.push(
      built.then(async (ok) => {
        if (!ok) return; // the build's failure is reported already
        const file = path.join(reportDir, 'e2e.json');
        await runStep(
          'browser e2e (Chromium)',
          'npx',
          ['playwright', 'test', '--config', 'e2e/playwright.config.ts', '--reporter=list,json'],
          {
            env: { CHROMIUM_PATH: chromium, PLAYWRIGHT_JSON_OUTPUT_NAME: file },
          },
        );
        countPlaywright('browser e2e (Chromium)', file);
      }),
    );
}
if (wanted('server') || wanted('postgres')) {
  const pgUrl = process.env.OUTBOX_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (await canConnect(pgUrl))
    lanes.push(vitest('server', 'server (PostgreSQL)', { OUTBOX_TEST_ENGINE: 'postgres', OUTBOX_TEST_POSTGRES_URL: pgUrl }));
  else
    skip(
      'The PostgreSQL half of the server suite',
      `no PostgreSQL answers at ${new URL(pgUrl).host}. Install one (apt-get install postgresql) or point OUTBOX_TEST_POSTGRES_URL at a server whose user may create databases.`,
    );
}
lanes.push(
  (async () => {
    if (wanted('server')) await vitest('server', 'server (SQLite)', { OUTBOX_TEST_ENGINE: 'sqlite' });
    if (wanted('web')) await vitest('web', 'console (web)');
  })(),
);
await Promise.all(lanes);

console.log('');
for (const { title, seconds, counts } of steps)
  console.log(
    `  ${title.padEnd(40)} ${`${seconds}s`.padStart(8)}${counts ? `  ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped` : ''}`,
  );
if (failures.length > 0) {
  // Repeated here because a long run's log is often read from its end only.
  console.log(`\nfailed tests (${failures.length}):`);
  for (const { title, where, name, message } of failures.slice(0, 30)) {
    console.log(`  ✘ [${title}] ${where} › ${name}`);
    for (const line of message) console.log(`      ${line}`);
  }
  console.log('');
}
if (flaky.length > 0) {
  console.log(`\npassed only on a retry (${flaky.length}): a flake to find, not a pass to forget`);
  for (const { title, where, name, message } of flaky) {
    console.log(`  ⚠ [${title}] ${where} › ${name}`);
    for (const line of message) console.log(`      ${line}`);
  }
  console.log('');
}
for (const problem of problems) console.log(`✘ ${problem}`);
console.log(`npm test: ${((Date.now() - runStarted) / 1000).toFixed(1)}s`);
console.log(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(problems.length > 0 || totals.failed > 0 ? 1 : 0);
