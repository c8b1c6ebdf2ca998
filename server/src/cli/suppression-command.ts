/**
 * `npm run outbox -- suppression list|add|remove|import|export`: the suppression list from the command line, through
 * the same service as the API (same checks, same audit entries, actor `cli`).
 */
import fs from 'node:fs';
import { once } from 'node:events';
import { systemClock } from '../clock.js';
import type { Store } from '../store/connection.js';
import { PRIVATE_FILE_MODE } from '../store/private-files.js';
import { createSuppressionService } from '../suppression/suppression.service.js';

export const SUPPRESSION_USAGE = `  suppression list [--json]             the suppression list, newest first (address, reason, since, expiry, note)
  suppression add ADDRESS [--note TEXT] [--expires ISO-DATE]
                                        stop sending to ADDRESS (until the expiry, if given)
  suppression remove ADDRESS            send to ADDRESS again
  suppression import FILE               add the lines address,note,expiresAt of a CSV file
  suppression export [--out FILE]       the whole list as CSV, to FILE or stdout`;

export class SuppressionUsageError extends Error {}

export async function runSuppressionCommand(
  store: Store,
  action: string | undefined,
  argument: string | undefined,
  options: { note?: string | undefined; expires?: string | undefined; out?: string | undefined; json?: boolean | undefined },
  out: (line: string) => void,
): Promise<void> {
  const service = createSuppressionService({ store, clock: systemClock });
  const needArgument = (what: string) => {
    if (!argument) throw new SuppressionUsageError(`suppression ${action} needs ${what}.\n\n${SUPPRESSION_USAGE}`);
    return argument;
  };
  switch (action) {
    case 'list': {
      const rows = [];
      for (let cursor: string | undefined, page; ; cursor = page.meta.nextCursor) {
        page = await service.listSuppressions({ limit: 500, cursor });
        rows.push(...page.data);
        if (!page.meta.nextCursor) break;
      }
      if (options.json) out(JSON.stringify(rows, null, 2));
      else if (rows.length === 0) out('The suppression list is empty.');
      else
        for (const s of rows)
          out(
            [
              s.address,
              s.reason,
              `since ${s.createdAt}`,
              s.expiresAt ? `until ${s.expiresAt}` : '',
              s.mailId ? `mail ${s.mailId}` : '',
              s.note ?? '',
            ]
              .filter(Boolean)
              .join('  '),
          );
      break;
    }
    case 'add': {
      const { suppression, created } = await service.addSuppression(
        { address: needArgument('an ADDRESS'), note: options.note, expiresAt: options.expires },
        'cli',
      );
      out(
        `${suppression.address} ${created ? 'added to' : 'updated on'} the suppression list${suppression.expiresAt ? ` until ${suppression.expiresAt}` : ''}.`,
      );
      break;
    }
    case 'remove':
      await service.removeSuppression(needArgument('an ADDRESS'), 'cli');
      out(`${argument!.trim().toLowerCase()} removed from the suppression list.`);
      break;
    case 'import': {
      const result = await service.importCsv(fs.readFileSync(needArgument('a FILE (CSV: address,note,expiresAt)'), 'utf8'), 'cli');
      out(`Imported: ${result.added} added, ${result.updated} updated, ${result.refused.length} refused.`);
      for (const r of result.refused) out(`  line ${r.line}: ${r.address || '(empty)'}: ${r.reason}`);
      break;
    }
    case 'export': {
      // Addresses and notes about people: readable by its owner only when it creates the file, as `export` does.
      const target = options.out ? fs.createWriteStream(options.out, { mode: PRIVATE_FILE_MODE }) : process.stdout;
      for await (const chunk of service.exportCsv({})) if (!target.write(chunk)) await once(target, 'drain');
      if (options.out) {
        await new Promise<void>((resolve, reject) =>
          (target as fs.WriteStream).end((error?: Error | null) => (error ? reject(error) : resolve())),
        );
        out(`Exported the suppression list to ${options.out}.`);
      }
      break;
    }
    default:
      throw new SuppressionUsageError(`Unknown command "suppression ${action ?? ''}".\n\n${SUPPRESSION_USAGE}`);
  }
}
