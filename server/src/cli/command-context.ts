/**
 * What every command of the command line is given by main.ts: the opened store, the configuration, the parsed
 * arguments and where to write. A usage error is printed as its message alone, without a stack.
 */
import { parseArgs } from 'node:util';
import type { AuthService } from '../auth/auth.service.js';
import type { Config } from '../config.js';
import type { Store } from '../store/connection.js';

export class UsageError extends Error {}

/**
 * What the command reads and writes besides `out`, the process's own by default. Tests run the command in
 * their process with their own (test/support/cli.ts), instead of paying a Node start per command.
 */
export interface CliIo {
  env?: NodeJS.ProcessEnv;
  /** Standard input, for --password-stdin; never a prompt. */
  stdin?: AsyncIterable<Buffer | string>;
  stderr?: (text: string) => void;
}

/** The options of every command, read at once: `group action NAME ARGUMENT` and these. */
export function parseCliArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'password-stdin': { type: 'boolean', default: false },
      count: { type: 'string' },
      seed: { type: 'string' },
      send: { type: 'boolean', default: false },
      'older-than': { type: 'string' },
      out: { type: 'string' },
      in: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
      json: { type: 'boolean', default: false },
      events: { type: 'string' },
      application: { type: 'string' },
      description: { type: 'string' },
      note: { type: 'string' },
      domain: { type: 'string' },
      selector: { type: 'string' },
      expires: { type: 'string' },
      lane: { type: 'string' },
      'max-per-second': { type: 'string' },
      'max-connections': { type: 'string' },
      tls: { type: 'string' },
    },
  });
}

export type CliValues = ReturnType<typeof parseCliArgs>['values'];

export interface CommandContext {
  store: Store;
  config: Config;
  auth: AuthService;
  values: CliValues;
  positionals: string[];
  /** The third and fourth words: `user add NAME`, `apikey content-retention NAME DAYS`. */
  name: string | undefined;
  argument: string | undefined;
  /** The NAME, or a usage error saying the command needs one. */
  needName: () => string;
  out: (line: string) => void;
  stderr: (text: string) => void;
  io: CliIo;
}

/** A command run on the opened store, by its words (`user add`, `export`). */
export type Command = (context: CommandContext) => Promise<void>;
