/**
 * `npm run outbox -- apikey create|revoke|lane|content-retention`: API keys (applications) from the command line,
 * through the auth service and content retention, with `cli` as the actor in the audit log.
 */
import { LANES, type Lane } from '@outbox/contract';
import { systemClock } from '../clock.js';
import { createContentRetention } from '../mail/content-retention.js';
import { UsageError, type Command } from './command-context.js';

export const APIKEY_USAGE = `  apikey create NAME [--lane LANE]      create an API key (an application; LANE transactional, the default,
                                        or bulk); the key alone is the last line printed
  apikey revoke NAME                    revoke an API key
  apikey lane NAME LANE                 move an application to the transactional or the bulk lane
  apikey content-retention NAME DAYS|default
                                        keep the content (raw message, bodies, attachments) of NAME's
                                        final mails DAYS days (0: removed once final), or follow
                                        CONTENT_RETENTION_DAYS again with "default"`;

function needLane(value: string | undefined): Lane {
  const lane = value?.trim().toLowerCase();
  if (!lane || !(LANES as readonly string[]).includes(lane)) throw new UsageError(`LANE must be ${LANES.join(' or ')}.`);
  return lane as Lane;
}

export const APIKEY_COMMANDS: Record<string, Command> = {
  async 'apikey create'({ auth, needName, name, values, out }) {
    const key = await auth.createApiKey(needName(), 'cli', { lane: needLane(values.lane ?? 'transactional') });
    out(`API key ${name} created. It is shown only now; keep it secret:`);
    out(key);
  },
  async 'apikey lane'({ auth, needName, name, positionals, out }) {
    const lane = needLane(positionals[3]);
    const before = await auth.setApiKeyLane(needName(), lane);
    out(
      before === lane
        ? `API key ${name} is in the ${lane} lane already.`
        : `API key ${name} moved from the ${before} lane to the ${lane} lane.`,
    );
  },
  async 'apikey revoke'({ auth, needName, name, out }) {
    await auth.revokeApiKey(needName());
    out(`API key ${name} revoked.`);
  },
  async 'apikey content-retention'({ store, config, needName, argument, out }) {
    const keyName = needName();
    const days = argument === 'default' ? null : /^\d{1,6}$/.test(argument ?? '') ? Number(argument) : undefined;
    if (days === undefined)
      throw new UsageError(`apikey content-retention ${keyName} needs DAYS, a whole number of days (0 or more), or "default".`);
    const retention = createContentRetention({
      store,
      clock: systemClock,
      defaultDays: config.contentRetentionDays,
      retentionDays: config.retentionDays,
    });
    const set = await retention.setApplicationContentRetention({ name: keyName }, days, 'cli');
    out(
      set.contentRetentionDays === null
        ? `API key ${set.name} follows CONTENT_RETENTION_DAYS again: the content of its final mails is kept ${set.effectiveContentRetentionDays} days.`
        : `API key ${set.name}: the content of its final mails is kept ${set.effectiveContentRetentionDays} days${set.effectiveContentRetentionDays === 0 ? ' (removed within a minute of the outcome by a running server)' : ''}.`,
    );
  },
};
