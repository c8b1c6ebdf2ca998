/**
 * A private Postfix for the bounce proof (docs/bounces.md#a-postfix-example): its own configuration, queue and log
 * under a temporary folder, listening on a loopback port, started with `postfix -c DIR start` and stopped in
 * afterAll. `dead.test` is routed to the `error:` transport, so Postfix accepts a mail (250) and then refuses it
 * itself and sends its own DSN to the envelope sender; the bounce domain is routed to Outbox's bounce listener.
 * Needs root (Postfix's master runs as root and drops to the `postfix` user) and Debian's `postfix` package.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { makeTempDir } from '../support/context.js';

const run = promisify(execFile);
const POSTFIX = '/usr/sbin/postfix';

/** Why the Postfix proof cannot run here, or undefined when it can. */
export function postfixMissing(): string | undefined {
  if (!fs.existsSync(POSTFIX)) return `${POSTFIX} is not installed (Debian: apt-get install -y postfix)`;
  if (process.getuid?.() !== 0) return 'Postfix must be started as root (its master drops privileges itself)';
  return undefined;
}

export interface PrivatePostfix {
  port: number;
  dir: string;
  /** Postfix's log so far, for a failing test's message. */
  log(): string;
  stop(): Promise<void>;
}

export async function startPrivatePostfix(options: { port: number; routes: Record<string, string> }): Promise<PrivatePostfix> {
  const dir = makeTempDir('outbox-postfix-');
  // The postfix user must reach its queue below this folder.
  fs.chmodSync(dir, 0o755);
  const config = path.join(dir, 'etc');
  fs.mkdirSync(config);
  // `postfix start` changes into the queue before it creates what is missing below it.
  fs.mkdirSync(path.join(dir, 'queue'), { mode: 0o755 });
  const logFile = path.join(dir, 'maillog');
  fs.writeFileSync(
    path.join(config, 'transport'),
    Object.entries(options.routes)
      .map(([domain, transport]) => `${domain} ${transport}\n`)
      .join(''),
  );
  fs.writeFileSync(
    path.join(config, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${path.join(dir, 'queue')}`,
      `data_directory = ${path.join(dir, 'data')}`,
      'command_directory = /usr/sbin',
      'daemon_directory = /usr/lib/postfix/sbin',
      // post-install (run by `postfix start`) finds the package's file list here; it is not inherited from /etc.
      'meta_directory = /etc/postfix',
      'shlib_directory = /usr/lib/postfix',
      'mail_owner = postfix',
      'setgid_group = postdrop',
      'myhostname = relay.postfix.test',
      'mydomain = postfix.test',
      'mydestination =',
      'inet_interfaces = 127.0.0.1',
      'inet_protocols = ipv4',
      'mynetworks = 127.0.0.0/8',
      `relay_domains = ${Object.keys(options.routes).join(', ')}`,
      `transport_maps = texthash:${path.join(config, 'transport')}`,
      'smtpd_relay_restrictions = permit_mynetworks, reject',
      // Otherwise smtpd already refuses at RCPT a domain whose transport is error:, and nothing bounces later.
      'smtpd_reject_unlisted_recipient = no',
      'smtputf8_enable = no',
      'biff = no',
      'append_dot_mydomain = no',
      // A retry of its own DSN (Outbox's listener not up yet) comes within seconds, not minutes.
      'queue_run_delay = 1s',
      'minimal_backoff_time = 1s',
      'maximal_backoff_time = 2s',
      'bounce_queue_lifetime = 0',
      'smtp_connect_timeout = 5s',
      `maillog_file_prefixes = ${dir}`,
      `maillog_file = ${logFile}`,
      'alias_maps =',
      'alias_database =',
      '',
    ].join('\n'),
  );
  // No chroot (column 5 = n): nothing to copy into a jail for a test.
  fs.writeFileSync(
    path.join(config, 'master.cf'),
    [
      `127.0.0.1:${options.port} inet n - n - - smtpd`,
      'pickup    unix  n       -       n       60      1       pickup',
      'cleanup   unix  n       -       n       -       0       cleanup',
      'qmgr      unix  n       -       n       300     1       qmgr',
      'rewrite   unix  -       -       n       -       -       trivial-rewrite',
      'bounce    unix  -       -       n       -       0       bounce',
      'defer     unix  -       -       n       -       0       bounce',
      'trace     unix  -       -       n       -       0       bounce',
      'verify    unix  -       -       n       -       1       verify',
      'flush     unix  n       -       n       1000?   0       flush',
      'proxymap  unix  -       -       n       -       -       proxymap',
      'smtp      unix  -       -       n       -       -       smtp',
      'relay     unix  -       -       n       -       -       smtp',
      'showq     unix  n       -       n       -       -       showq',
      'error     unix  -       -       n       -       -       error',
      'retry     unix  -       -       n       -       -       error',
      'discard   unix  -       -       n       -       -       discard',
      'anvil     unix  -       -       n       -       1       anvil',
      'scache    unix  -       -       n       -       1       scache',
      'postlog   unix-dgram n  -       n       -       1       postlogd',
      '',
    ].join('\n'),
  );
  try {
    await run(POSTFIX, ['-c', config, 'start'], { timeout: 60_000 });
  } catch (error) {
    const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
    const stderr = (error as { stderr?: string }).stderr ?? '';
    throw new Error(`postfix -c ${config} start failed: ${error instanceof Error ? error.message : String(error)}\n${stderr}\n${log}`);
  }
  return {
    port: options.port,
    dir,
    log: () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : ''),
    async stop() {
      await run(POSTFIX, ['-c', config, 'stop'], { timeout: 60_000 }).catch(() =>
        run(POSTFIX, ['-c', config, 'abort']).catch(() => undefined),
      );
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
