/**
 * The command line of every benchmark: each declares its options here by kind (a whole number, an engine...),
 * with its default, and gets them back converted and checked, so a mistyped `--count 5k` stops the run with a
 * message naming the option instead of measuring NaN mails. `--help` prints the benchmark's first comment,
 * which documents its command line. The engine choices of the benchmarks that run on several engines in turn
 * mean the same in each (`enginesOption`, `resolveEngines`).
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import type { Engine } from './outbox.js';
import { postgresAdminUrl, postgresReachable } from './postgres.js';

/** One option: how parseArgs reads it, and how its text (or flag) becomes the value the benchmark uses. */
export interface BenchOption<T> {
  type: 'string' | 'boolean';
  default?: string | boolean;
  read(raw: string | boolean | undefined, flag: string): T;
}

type Values<S> = { [K in keyof S]: S[K] extends BenchOption<infer T> ? T : never };

/** Parses this process's arguments by `spec` (parseArgs, strict); prints the usage and exits on `--help`. */
export function parseBenchArgs<S extends Record<string, BenchOption<unknown>>>(spec: S): Values<S> {
  const entries = Object.entries(spec);
  const options = Object.fromEntries(
    entries.map(([name, option]) => [name, { type: option.type, ...(option.default === undefined ? {} : { default: option.default }) }]),
  );
  let values: Record<string, string | boolean | Array<string | boolean> | undefined>;
  try {
    ({ values } = parseArgs({ options: { ...options, help: { type: 'boolean' } } }));
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)} (--help shows the options)`);
  }
  if (values.help) {
    console.log(usage(process.argv[1] ?? ''));
    process.exit(0);
  }
  return Object.fromEntries(
    entries.map(([name, option]) => [name, option.read(values[name] as string | boolean | undefined, `--${name}`)]),
  ) as Values<S>;
}

/** The first comment of the benchmark's file, without its stars: what it measures and its command line. */
function usage(file: string): string {
  const comment = /\/\*\*([\s\S]*?)\*\//.exec(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '')?.[1];
  if (comment === undefined) return `${file}: no comment documents its options`;
  return comment
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

function text(raw: string | boolean | undefined): string {
  return typeof raw === 'string' ? raw : '';
}

function readWholeNumber(raw: string | boolean | undefined, flag: string, min: number): number {
  const value = Number(text(raw));
  if (!Number.isInteger(value) || value < min) throw new Error(`${flag} is a whole number of at least ${min}, not "${text(raw)}"`);
  return value;
}

/** A whole number of at least `min` (1 unless said): counts, rounds, connections, sizes. */
export function wholeNumberOption(defaultValue: number, { min = 1 } = {}): BenchOption<number> {
  return { type: 'string', default: String(defaultValue), read: (raw, flag) => readWholeNumber(raw, flag, min) };
}

/** A whole number with no default: undefined when the option is not given. */
export function optionalWholeNumberOption({ min = 1 } = {}): BenchOption<number | undefined> {
  return { type: 'string', read: (raw, flag) => (raw === undefined ? undefined : readWholeNumber(raw, flag, min)) };
}

/** Whole numbers of at least 1, separated by commas (`--processes 1,2`). */
export function wholeNumbersOption(defaultValue: number[]): BenchOption<number[]> {
  return {
    type: 'string',
    default: defaultValue.join(','),
    read: (raw, flag) =>
      text(raw)
        .split(',')
        .map((part) => readWholeNumber(part, flag, 1)),
  };
}

/** A number above zero, fractions allowed: durations and intervals. */
export function positiveNumberOption(defaultValue: number): BenchOption<number> {
  return {
    type: 'string',
    default: String(defaultValue),
    read: (raw, flag) => {
      const value = Number(text(raw));
      if (!Number.isFinite(value) || value <= 0) throw new Error(`${flag} is a number above 0, not "${text(raw)}"`);
      return value;
    },
  };
}

/** Free text, undefined when not given unless it has a default. */
export function textOption(): BenchOption<string | undefined>;
export function textOption(defaultValue: string): BenchOption<string>;
export function textOption(defaultValue?: string): BenchOption<string | undefined> {
  return {
    type: 'string',
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
    read: (raw) => (raw === undefined ? undefined : text(raw)),
  };
}

/** A switch, off unless given. */
export function flagOption(): BenchOption<boolean> {
  return { type: 'boolean', default: false, read: (raw) => raw === true };
}

/** One of `choices`. */
export function choiceOption<const C extends string>(defaultValue: C, choices: readonly C[]): BenchOption<C> {
  return {
    type: 'string',
    default: defaultValue,
    read: (raw, flag) => {
      const value = text(raw);
      if (!(choices as readonly string[]).includes(value)) throw new Error(`${flag} is ${choices.join(', ')}, not "${value}"`);
      return value as C;
    },
  };
}

/**
 * `--tag NAME` of the benchmarks on the kept demo store (bench/support/demo-store.ts): appended to its name, so
 * worktrees sharing one PostgreSQL server (each with its own migrations) do not share a store.
 */
export function tagOption(): BenchOption<string | undefined> {
  return textOption();
}

/**
 * `--concurrency N`: the worker's WORKER_CONCURRENCY, as text for `loadConfig` to check (its default when not
 * given), for the benchmarks that build the worker as main.ts does (bench/support/bench-worker.ts `benchWorkerConfig`).
 */
export function workerConcurrencyOption(): BenchOption<string | undefined> {
  return textOption();
}

/** `--engine` of a benchmark that runs on one engine: sqlite (the default) or postgres. */
export function engineOption(): BenchOption<Engine> {
  return choiceOption<Engine>('sqlite', ['sqlite', 'postgres']);
}

export type EngineChoice = Engine | 'all' | 'auto';

/** `--engine` of a benchmark that runs on several engines in turn: one of `choices`, for `resolveEngines`. */
export function enginesOption<const C extends EngineChoice>(defaultValue: C, choices: readonly C[]): BenchOption<C> {
  return choiceOption(defaultValue, choices);
}

/**
 * The engines an `--engine` choice runs on, in order: `sqlite` or `postgres` alone; `all` both; `auto` SQLite, and
 * PostgreSQL when one answers at OUTBOX_BENCH_POSTGRES_URL. When none answers, PostgreSQL is left out with a line
 * saying so (`withoutPostgres: 'skip'`, and always for `auto`), or the run stops before it starts (`'fail'`: the
 * benchmarks where `all` is asked for explicitly beside `auto`, and soak, which should not find out after its SQLite
 * half). With nothing left to run on, the process says so and ends.
 */
export async function resolveEngines(choice: EngineChoice, { withoutPostgres }: { withoutPostgres: 'skip' | 'fail' }): Promise<Engine[]> {
  const wanted: Engine[] = choice === 'sqlite' || choice === 'postgres' ? [choice] : ['sqlite', 'postgres'];
  if (!wanted.includes('postgres') || (await postgresReachable())) return wanted;
  const host = new URL(postgresAdminUrl).host;
  if (withoutPostgres === 'fail' && choice !== 'auto')
    throw new Error(`--engine ${choice}: no PostgreSQL answers at ${host} (set OUTBOX_BENCH_POSTGRES_URL)`);
  console.log(`(PostgreSQL skipped: nothing answers at ${host}; set OUTBOX_BENCH_POSTGRES_URL)`);
  const left = wanted.filter((engine) => engine !== 'postgres');
  if (left.length === 0) {
    console.log('nothing to measure');
    process.exit(0);
  }
  return left;
}
