/**
 * `npm run outbox -- dkim generate`: a DKIM key and the DNS record to publish for it. It needs no store, so it runs
 * before one is opened.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import { generateDkimKey } from '../delivery/dkim.js';
import { PRIVATE_FILE_MODE } from '../store/private-files.js';
import { UsageError, type CliValues } from './command-context.js';

export const DKIM_USAGE = `  dkim generate --domain D --selector S [--out FILE]
                                        write an RSA-2048 DKIM key (FILE, default DATA_DIR/dkim-S.pem) and
                                        print its path and the DNS TXT record to publish`;

export function runDkimGenerate(config: Config, values: CliValues, out: (line: string) => void): void {
  if (!values.domain || !values.selector) throw new UsageError('dkim generate needs --domain DOMAIN and --selector SELECTOR.');
  const key = generateDkimKey(values.domain.trim().toLowerCase(), values.selector.trim());
  const file = path.resolve(values.out ?? path.join(config.dataDir, `dkim-${values.selector.trim()}.pem`));
  if (fs.existsSync(file))
    throw new UsageError(`${file} exists; a published key is never overwritten. Choose another --selector or --out.`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // The private key: its owner only, and never overwritten (a published record would stop matching).
  fs.writeFileSync(file, key.privateKeyPem, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  out(`Private key written to ${file}. Set DKIM_DOMAIN=${values.domain} DKIM_SELECTOR=${values.selector} DKIM_PRIVATE_KEY_FILE=${file}`);
  out('Publish this DNS TXT record before turning signing on:');
  out(`${key.recordName}. IN TXT "${key.recordValue}"`);
}
