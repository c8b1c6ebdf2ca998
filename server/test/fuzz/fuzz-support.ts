/**
 * What the fuzz suites share: the run's size and seed, the hostile values they draw from, and the check every
 * answer must pass. A failing answer does not stop the run: each distinct failure (route, status, code) is
 * kept with the first request that showed it, and the test fails at the end listing them all, so one run
 * reports every problem rather than the first.
 *
 * OUTBOX_FUZZ_RUNS   runs per property (default 40: the CI bound, well under a minute per engine)
 * OUTBOX_FUZZ_SEED   the seed (default 20261123, fixed, so CI runs are repeatable); `random` draws a new one,
 *                    printed at the start, which reproduces the run when passed back.
 *
 * A longer run on demand: OUTBOX_FUZZ_RUNS=2000 OUTBOX_FUZZ_SEED=random npx vitest run test/fuzz
 */
import fc from 'fast-check';

const seedSetting = process.env.OUTBOX_FUZZ_SEED ?? '20261123';
export const fuzzSeed = seedSetting === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(seedSetting);
export const fuzzRuns = Number(process.env.OUTBOX_FUZZ_RUNS ?? '40');
if (!Number.isInteger(fuzzSeed) || !Number.isInteger(fuzzRuns) || fuzzRuns < 1)
  throw new Error('OUTBOX_FUZZ_SEED must be a whole number or "random", OUTBOX_FUZZ_RUNS a whole number of at least 1');

/** Per property: a larger run gets a longer time limit, so the bound is the count, not the clock. */
export const fuzzTimeoutMs = 60_000 + fuzzRuns * 1_000;

export function fuzzParameters(offset: number): fc.Parameters<unknown> {
  return { seed: fuzzSeed + offset, numRuns: fuzzRuns, endOnFailure: true };
}

/** Numbers written as text the way an attacker or a broken client writes them; every one is also swept. */
export const boundaryNumbers = [
  '0',
  '-1',
  '1',
  '1.5',
  '1e400',
  '-1e400',
  '1e300',
  '1e-400',
  'Infinity',
  '-Infinity',
  'NaN',
  '99999999999999999999999',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775809',
  '2147483648',
  '4294967296',
  '9007199254740993',
  '0x10',
  '0b1',
  '0o7',
  '+1',
  '01',
  '1_000',
  ' 1',
  '1 ',
  '1\n',
  '1%0a',
  '1%00',
  '%00',
  '',
  '-0',
  '0.0000001',
  '1,2',
  'true',
  'null',
  '[]',
  '{}',
];

export const numberLikeText = fc.oneof(
  fc.constantFrom(...boundaryNumbers),
  fc.integer().map(String),
  fc.double({ noNaN: false }).map(String),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
);

/** Text that has broken parsers, stores and encoders: NUL and control characters, lone surrogates, RTL,
 * combining marks, emoji, very long runs, SQL and path fragments. */
export const boundaryTexts = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\r\n',
  '\r',
  '\n.\n',
  '\r\n.\r\n',
  '\ud800',
  '\udfff',
  'a\ud800b',
  '\u202e\u202d',
  '\ufeff',
  '\uffff',
  '\u{10ffff}',
  'e\u0301\u0301\u0301\u0301',
  '👩‍👩‍👧‍👦',
  'Zoë 東京 №42',
  "' or 1=1 --",
  '"; drop table mails; --',
  '%',
  '_',
  '\\',
  '../../etc/passwd',
  '..%2f..%2f',
  '${jndi:ldap://x}',
  '<script>alert(1)</script>',
  '__proto__',
  'constructor',
  'toString',
  'x'.repeat(10_000),
];

export const hostileText = fc.oneof(
  fc.constantFrom(...boundaryTexts),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ maxLength: 20 }).map((s) => s.repeat(200)),
  numberLikeText,
);

/** Any JSON value, nested up to a depth, plus values JSON has no literal for once stringified oddly. */
export const anyJson = fc.jsonValue({ maxDepth: 4 });

export const hostileValue = fc.oneof(
  { weight: 4, arbitrary: hostileText },
  { weight: 1, arbitrary: anyJson },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, 1e308, -1e308, [], {}, [[]], { a: {} }) },
);

/** A JSON document nested `depth` deep: arrays or objects. */
export function deeplyNested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

export interface Answer {
  statusCode: number;
  body: string;
  headers: Record<string, unknown>;
}

export interface Failure {
  /** Up to EXAMPLES distinct requests that showed it, each with its answer. */
  examples: Array<{ request: string; answer: string }>;
}

const EXAMPLES = 6;

export class FailureLog {
  readonly failures = new Map<string, Failure>();
  checked = 0;
  byStatus = new Map<number, number>();
  /** The answers checked and the distinct failures found since `beginProperty()`: the current property's own. */
  private property = { checked: 0, failures: new Set<string>() };

  check(route: string, request: string, answer: Answer): void {
    this.checked++;
    this.property.checked++;
    this.byStatus.set(answer.statusCode, (this.byStatus.get(answer.statusCode) ?? 0) + 1);
    const problem = describeProblem(answer);
    if (problem === undefined) return;
    const key = `${route} → ${answer.statusCode} ${problem}${problem.startsWith('(4xx') ? ` ${shapeOf(answer.body)}` : ''}`;
    this.property.failures.add(key);
    const failure = this.failures.get(key) ?? { examples: [] };
    this.failures.set(key, failure);
    if (failure.examples.length < EXAMPLES) failure.examples.push({ request: request.slice(0, 400), answer: answer.body.slice(0, 200) });
  }

  /** Starts counting a property's own answers and failures (each test asserts its own). */
  beginProperty(): void {
    this.property = { checked: 0, failures: new Set() };
  }

  /** The answers the current property checked, and its distinct failures with their examples. */
  propertyVerdict(): { checked: number; failures: number; report: string } {
    const { checked, failures } = this.property;
    return { checked, failures: failures.size, report: this.report([...failures]) };
  }

  summary(): string {
    const statuses = [...this.byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, n]) => `${status}×${n}`)
      .join(' ');
    return `${this.checked} answers checked (seed ${fuzzSeed}, ${fuzzRuns} runs per property): ${statuses}`;
  }

  /** The failures named (all by default), each with its examples. */
  report(keys: readonly string[] = [...this.failures.keys()]): string {
    return keys
      .map((key) => {
        const failure = this.failures.get(key)!;
        return `${key}\n${failure.examples.map((e) => `    request: ${e.request}\n      answer: ${e.answer}`).join('\n')}`;
      })
      .join('\n');
  }
}

/**
 * What an SMTP fuzz suite (the submission listener, the bounce listener) saw over its raw sessions: each distinct
 * problem with up to six transcripts that showed it, and the reply codes, for the run's summary.
 */
export class SessionLog {
  readonly problems = new Map<string, string[]>();
  readonly replies = new Map<string, number>();
  sessions = 0;

  note(kind: string, transcript: string): void {
    const examples = this.problems.get(kind) ?? [];
    this.problems.set(kind, examples);
    if (examples.length < EXAMPLES) examples.push(transcript.slice(0, 600));
  }

  countReply(reply: string): void {
    const code = reply.slice(0, 3);
    this.replies.set(code, (this.replies.get(code) ?? 0) + 1);
  }

  summary(): string {
    const counts = [...this.replies.entries()]
      .sort()
      .map(([code, n]) => `${code}×${n}`)
      .join(' ');
    return `${this.sessions} sessions (seed ${fuzzSeed}, ${fuzzRuns} runs per property), replies ${counts}`;
  }

  report(): string {
    return [...this.problems].map(([kind, examples]) => `${kind}\n    ${examples.join('\n    ')}`).join('\n');
  }
}

function describeProblem(answer: Answer): string | undefined {
  if (answer.statusCode >= 500) {
    return `(server error: ${errorCodeOf(answer.body) ?? 'no error code'})`;
  }
  if (answer.statusCode >= 400) {
    const code = errorCodeOf(answer.body);
    if (code === undefined) return '(4xx without {error:{code,message}})';
  }
  return undefined;
}

/** What a wrong error body looks like, so that one kind of wrong body is one failure, whatever the request. */
function shapeOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    return `{${Object.keys(parsed).join(',')}}${typeof parsed.code === 'string' ? ` code ${parsed.code}` : ''}${typeof parsed.message === 'string' && parsed.message.length < 60 ? ` "${parsed.message}"` : ''}`;
  } catch {
    return body === '' ? 'empty body' : 'not JSON';
  }
}

function errorCodeOf(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { error?: { code?: unknown; message?: unknown } };
    const error = parsed.error;
    if (
      error &&
      typeof error.code === 'string' &&
      typeof error.message === 'string' &&
      error.message.length > 0 &&
      Object.keys(parsed).length === 1
    )
      return error.code;
  } catch {
    // not JSON
  }
  return undefined;
}
