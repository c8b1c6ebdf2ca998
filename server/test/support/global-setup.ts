/**
 * vitest globalSetup, once per run before any test file starts:
 * - builds the migrated template of the engine under test (template.ts), so that the first files do not all
 *   wait for it at once;
 * - bundles the server and the CLI with esbuild for the tests that run them as child processes
 *   (outbox-process.ts, cli.ts): a process started from the bundle is ready in about a second, where
 *   `node --import tsx` compiled the sources anew in every process (2–8 s each on a busy two-core machine, and
 *   the multi-instance tests start a dozen). Unlike `npm run build -w server`, the bundle holds the
 *   dependencies too: resolving and loading ~400 modules from node_modules was a third of a start's CPU
 *   (1.4–1.6 → 0.8–1.0 CPU-s per server start). The browser suite runs the product's own build.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';
import { ensurePostgresTemplate, ensureSqliteTemplate, postgresAdminUrl } from './template.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The bundled server and CLI of this run (absolute paths). */
    outboxBundle: { main: string; cli: string };
  }
}

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export default async function setup(project: TestProject): Promise<void> {
  if (process.env.OUTBOX_TEST_ENGINE === 'postgres') await ensurePostgresTemplate(postgresAdminUrl);
  // SQLite stores are opened on both halves (the CLI's export source, the backup test), and it costs ~50 ms.
  await ensureSqliteTemplate();
  project.provide('outboxBundle', await bundleServer());
}

/**
 * Into server/.tmp/ (gitignored) as main-<pid>.js and cli-<pid>.js: one level below server/, as dist/ is, so
 * that paths the code finds from its own file (the console's web/dist) come out the same; named by this
 * process, so two runs in one worktree do not overwrite each other's. Bundles of runs that ended are removed.
 */
async function bundleServer(): Promise<{ main: string; cli: string }> {
  const outdir = path.join(serverDir, '.tmp');
  fs.mkdirSync(outdir, { recursive: true });
  for (const entry of fs.readdirSync(outdir)) {
    const pid = /^(?:main|cli)-(\d+)\.js(?:\.map)?$/.exec(entry)?.[1];
    if (pid && !isRunning(Number(pid))) fs.rmSync(path.join(outdir, entry), { force: true });
  }
  await bundleForNode({ [`main-${process.pid}`]: 'src/main.ts', [`cli-${process.pid}`]: 'src/cli/main.ts' }, outdir, {
    sourcemap: true,
    dependencies: 'bundled',
  });
  return { main: path.join(outdir, `main-${process.pid}.js`), cli: path.join(outdir, `cli-${process.pid}.js`) };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Packages left as imports when the dependencies are bundled: native addons (better-sqlite3, argon2, pg's
 * optional pg-native), and packages that read files beside their own modules at run time (swagger-ui's assets,
 * pino's transport workers).
 */
const unbundled = ['better-sqlite3', 'argon2', 'pg-native', '@fastify/swagger-ui', 'pino', 'thread-stream'];

/**
 * Server-side TypeScript (paths relative to server/) bundled for Node as `npm run build -w server` does, the
 * contract package read from its sources. Dependencies stay imports unless `dependencies: 'bundled'`. Also for
 * a test's own scripts.
 */
export async function bundleForNode(
  entryPoints: Record<string, string>,
  outdir: string,
  options: { sourcemap?: boolean; dependencies?: 'external' | 'bundled' } = {},
): Promise<void> {
  const bundled = options.dependencies === 'bundled';
  await build({
    absWorkingDir: serverDir,
    entryPoints,
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    ...(bundled
      ? {
          external: unbundled,
          // The CommonJS packages inside an ES module bundle still call require() (node: built-ins, JSON).
          banner: {
            js: "import { createRequire as outboxCreateRequire } from 'node:module'; const require = outboxCreateRequire(import.meta.url);",
          },
        }
      : { packages: 'external' as const }),
    alias: { '@outbox/contract': '../contract/src/index.ts' },
    sourcemap: options.sourcemap ?? false,
    // The dependencies' own sources would make the map ten times the bundle; their file and line are enough.
    sourcesContent: !bundled,
    logLevel: 'warning',
  });
}
