/**
 * `npm run outbox -- suppression …` on a fresh store, through `runCli` in this process (the same code as a
 * user's command, without a Node start per call; the process boundary itself is test/cli/cli.test.ts's): add with
 * note and expiry, list, export, remove, import of a file with a bad line, a refused address.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliProcess, cli as runCli } from '../support/cli.js';
import { makeTempDir } from '../support/context.js';
import { freshEnvironment, type OutboxEnvironment } from '../support/outbox-process.js';

let environment: OutboxEnvironment;
let tempDir: string;

/** The command in this process (support/cli.ts): `suppression …`, or `dkim …` as given. */
const cli = (args: string[]) => runCli(args[0] === 'dkim' ? args : ['suppression', ...args], environment.env);

beforeAll(async () => {
  environment = await freshEnvironment();
  tempDir = makeTempDir('outbox-suppression-cli-');
});
afterAll(async () => {
  await environment.dispose();
  fs.rmSync(tempDir, { recursive: true, force: true });
});

describe('suppression CLI', () => {
  it('adds, lists, exports, imports and removes; bad input exits 1 with the reason', async () => {
    expect(await cli(['add', 'Ann@Example.net', '--note', 'asked us', '--expires', '2031-01-01T00:00:00Z'])).toMatchObject({
      code: 0,
      stdout: 'ann@example.net added to the suppression list until 2031-01-01T00:00:00.000Z.\n',
    });
    const bad = await cli(['add', 'not-an-address']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('address is not an email address');

    const file = path.join(tempDir, 'in.csv');
    fs.writeFileSync(file, 'address,note,expiresAt\nbob@example.net,from the old system,\nbroken,,\nann@example.net,,\n');
    const imported = await cli(['import', file]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toContain('Imported: 1 added, 1 updated, 1 refused.');
    expect(imported.stdout).toContain('line 3: broken: address is not an email address');

    const list = await cli(['list']);
    expect(list.stdout).toMatch(/ann@example\.net {2}manual {2}since /);
    expect(list.stdout).toContain('bob@example.net');

    // The CSV streams to standard output, so this one runs as its own process (the run's bundle).
    const exported = await cliProcess(['suppression', 'export'], environment.env);
    expect(exported.stdout.split('\r\n')[0]).toBe('address,reason,mailId,detail,note,createdBy,createdAt,expiresAt');
    expect(exported.stdout).toMatch(/bob@example\.net,manual,,,from the old system,cli,/);

    // To a file: readable by its owner only, like `export`'s.
    const out = path.join(tempDir, 'suppressions.csv');
    const toFile = await cli(['export', '--out', out]);
    expect(toFile, toFile.stderr).toMatchObject({ code: 0, stdout: `Exported the suppression list to ${out}.\n` });
    expect(fs.readFileSync(out, 'utf8')).toBe(exported.stdout);
    expect((fs.statSync(out).mode & 0o777).toString(8)).toBe('600');

    expect((await cli(['remove', 'bob@example.net'])).stdout).toBe('bob@example.net removed from the suppression list.\n');
    const again = await cli(['remove', 'bob@example.net']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('bob@example.net is not on the suppression list.');
    expect((await cli(['list', '--json'])).stdout).not.toContain('bob@example.net');
  });

  it('dkim generate writes a private RSA-2048 key and prints the DNS TXT record to publish', async () => {
    const file = path.join(tempDir, 'dkim.pem');
    const result = await cli(['dkim', 'generate', '--domain', 'shop.example', '--selector', 's1', '--out', file]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`Private key written to ${file}.`);
    expect(result.stdout).toMatch(/^s1\._domainkey\.shop\.example\. IN TXT "v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}"$/m);
    const key = crypto.createPrivateKey(fs.readFileSync(file));
    expect([key.asymmetricKeyType, key.asymmetricKeyDetails?.modulusLength]).toEqual(['rsa', 2048]);
    expect(fs.statSync(file).mode & 0o077).toBe(0);
    // Never overwritten: the published record would stop matching.
    expect((await cli(['dkim', 'generate', '--domain', 'shop.example', '--selector', 's1', '--out', file])).code).toBe(1);
  });
});
