/**
 * The operators' command line (src/cli/main.ts), run two ways:
 * - `cli()` in this process, through `runCli` with the given environment, standard input and output
 *   (what `main` does, without a Node start and a TypeScript compile per command: ~1–3 s each on a busy
 *   machine). A failure gives code 1 and the error's message on stderr, as `main` prints it.
 * - `cliProcess()` as its own process (the run's bundle of src/cli/main.ts, see global-setup.ts): for tests of the process
 *   boundary (exit codes, a CLI process beside a running server process).
 */
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../src/cli/main.js';
import { nodeArgs } from './outbox-process.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** `env` is the whole environment the command sees (as `freshEnvironment().env`), not added to this process's. */
export async function cli(args: string[], env: Record<string, string>, input = ''): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  try {
    await runCli(args, (line) => (stdout += `${line}\n`), {
      env,
      stdin: Readable.from([Buffer.from(input)]),
      stderr: (text) => (stderr += text),
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    return { code: 1, stdout, stderr: `${stderr}${error instanceof Error ? error.message : String(error)}\n` };
  }
}

/** The command in its own process, with this process's environment plus `env`. */
export function cliProcess(args: string[], env: Record<string, string>, input = ''): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs('cli'), ...args], {
      cwd: serverDir,
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.stdin.end(input);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
