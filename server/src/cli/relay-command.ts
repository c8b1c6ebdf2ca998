/**
 * `npm run outbox -- relay list|add|remove`: named relays from the command line (docs/relays.md), through the same
 * service as the API (same checks, same audit entries, actor `cli`). Routes are set through the API or the console.
 */
import { systemClock } from '../clock.js';
import { createRelayService } from '../relays/relay.service.js';
import type { Store } from '../store/connection.js';

export const RELAY_USAGE = `  relay list [--json]                   the named relays (never their logins)
  relay add NAME URL [--max-per-second N] [--max-connections N] [--tls MODE]
                                        add a relay (smtp:// or smtps://; a user:pass in URL is kept
                                        apart and never shown again); MODE require, opportunistic or off
  relay remove NAME                     remove a relay no route names`;

export class RelayUsageError extends Error {}

function positiveInteger(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new RelayUsageError(`${option} must be a whole number of 1 or more.`);
  return number;
}

export async function runRelayCommand(
  store: Store,
  action: string | undefined,
  name: string | undefined,
  url: string | undefined,
  options: {
    'max-per-second'?: string | undefined;
    'max-connections'?: string | undefined;
    tls?: string | undefined;
    json?: boolean | undefined;
  },
  out: (line: string) => void,
): Promise<void> {
  const relays = createRelayService({ store, clock: systemClock });
  switch (action) {
    case 'list': {
      const list = await relays.listRelays();
      if (options.json) out(JSON.stringify(list, null, 2));
      else if (list.length === 0) out('No named relay: every mail goes to RELAY_URL.');
      else
        for (const relay of list)
          out(
            [
              relay.name,
              relay.url,
              `tls ${relay.tls}`,
              relay.hasCredentials ? 'login set' : 'no login',
              `${relay.maxConnections} connections`,
              relay.maxPerSecond ? `${relay.maxPerSecond}/s` : '',
              relay.maxPerDay ? `${relay.maxPerDay}/day` : '',
            ]
              .filter(Boolean)
              .join('  '),
          );
      return;
    }
    case 'add': {
      if (!name || !url) throw new RelayUsageError(`relay add needs a NAME and a URL.\n\n${RELAY_USAGE}`);
      const tls = options.tls?.trim().toLowerCase();
      if (tls !== undefined && tls !== 'require' && tls !== 'opportunistic' && tls !== 'off')
        throw new RelayUsageError('--tls must be require, opportunistic or off.');
      const maxPerSecond = positiveInteger(options['max-per-second'], '--max-per-second');
      const maxConnections = positiveInteger(options['max-connections'], '--max-connections');
      const relay = await relays.createRelay(
        {
          name,
          url,
          ...(tls ? { tls } : {}),
          ...(maxPerSecond !== undefined ? { maxPerSecond } : {}),
          ...(maxConnections !== undefined ? { maxConnections } : {}),
        },
        'cli',
      );
      out(`Relay ${relay.name} added: ${relay.url}, tls ${relay.tls}${relay.hasCredentials ? ', login kept apart' : ''}.`);
      return;
    }
    case 'remove': {
      if (!name) throw new RelayUsageError(`relay remove needs a NAME.\n\n${RELAY_USAGE}`);
      const relay = await relays.findRelayByName(name);
      if (!relay) throw new RelayUsageError(`No relay is named ${name}.`);
      await relays.deleteRelay(relay.id, 'cli');
      out(`Relay ${name} removed.`);
      return;
    }
    default:
      throw new RelayUsageError(`Unknown relay command ${action ?? ''}.\n\n${RELAY_USAGE}`);
  }
}
