/**
 * `npm run outbox -- webhook …`: webhook endpoints from the command line (docs/webhooks.md#the-command-line).
 * The same service as the API, with `cli` as the actor in the audit log. A running server's dispatcher picks
 * up a test event or an enabled endpoint at its next poll (within a second).
 */
import { APPLICATION_EVENT_TYPES, isApplicationEventType, type WebhookEndpoint } from '@outbox/contract';
import { systemClock } from '../clock.js';
import type { Store } from '../store/connection.js';
import { createWebhookService } from '../webhooks/webhook.service.js';

export const WEBHOOK_USAGE = `  webhook add URL [--events a,b] [--application NAME] [--description TEXT]
                                        add an endpoint (every event type and application unless
                                        limited); its secret is printed once
  webhook list                          the endpoints, their state and 24-hour success rate
  webhook remove ID                     delete an endpoint and its delivery log
  webhook enable ID | disable ID        start or stop delivering to an endpoint
  webhook rotate ID                     a new secret, printed once; the old one signs beside it for 24 h
  webhook test ID                       send a webhook.test event to the endpoint
  webhook deliveries ID                 its latest deliveries and their attempts`;

export class WebhookUsageError extends Error {}

export interface WebhookCommandOptions {
  events?: string | undefined;
  application?: string | undefined;
  description?: string | undefined;
}

function describeEndpoint(endpoint: WebhookEndpoint): string {
  const state = endpoint.enabled ? 'enabled' : `disabled (${endpoint.disabledReason ?? 'operator'})`;
  const rate =
    endpoint.last24h.successRate === null
      ? 'no attempts in 24 h'
      : `${Math.round(endpoint.last24h.successRate * 100)} % of ${endpoint.last24h.attempts} in 24 h`;
  return [
    `${endpoint.id}  ${endpoint.url}  ${state}`,
    `    events: ${endpoint.eventTypes.length === 0 ? 'all' : endpoint.eventTypes.join(', ')}; application: ${endpoint.application?.name ?? 'all'}; ${rate}${endpoint.failingSince ? `; failing since ${endpoint.failingSince}` : ''}`,
    ...(endpoint.description ? [`    ${endpoint.description}`] : []),
  ].join('\n');
}

export async function runWebhookCommand(
  store: Store,
  action: string | undefined,
  argument: string | undefined,
  options: WebhookCommandOptions,
  allowPrivate: boolean,
  out: (line: string) => void,
): Promise<void> {
  const webhooks = createWebhookService({ store, clock: systemClock, allowPrivate });
  const needId = (): number => {
    if (!argument || !/^[1-9][0-9]{0,15}$/.test(argument))
      throw new WebhookUsageError(`webhook ${action} needs the endpoint's ID (a number; see webhook list).\n\n${WEBHOOK_USAGE}`);
    return Number(argument);
  };
  switch (action) {
    case 'add': {
      if (!argument) throw new WebhookUsageError(`webhook add needs a URL.\n\n${WEBHOOK_USAGE}`);
      const eventTypes = options.events
        ?.split(',')
        .map((type) => type.trim())
        .filter(Boolean);
      const unknown = eventTypes?.filter((type) => !isApplicationEventType(type)) ?? [];
      if (unknown.length > 0)
        throw new WebhookUsageError(`--events: unknown event type ${unknown.join(', ')}; known: ${APPLICATION_EVENT_TYPES.join(', ')}.`);
      const applicationId = options.application === undefined ? undefined : await webhooks.findApplicationId(options.application);
      const endpoint = await webhooks.createEndpoint(
        {
          url: argument,
          ...(options.description !== undefined ? { description: options.description } : {}),
          ...(eventTypes ? { eventTypes: eventTypes.filter(isApplicationEventType) } : {}),
          ...(applicationId !== undefined ? { applicationId } : {}),
        },
        'cli',
      );
      out(describeEndpoint(endpoint));
      out(`Endpoint ${endpoint.id} added. Its secret is shown only now; give it to the receiver, which verifies every request with it:`);
      out(endpoint.secret);
      return;
    }
    case 'list': {
      const endpoints = await webhooks.listEndpoints();
      if (endpoints.length === 0) out('No webhook endpoints. Add one with: npm run outbox -- webhook add URL');
      for (const endpoint of endpoints) out(describeEndpoint(endpoint));
      return;
    }
    case 'remove': {
      const endpoint = await webhooks.deleteEndpoint(needId(), 'cli');
      out(`Endpoint ${endpoint.id} (${endpoint.url}) removed with its delivery log.`);
      return;
    }
    case 'enable':
    case 'disable': {
      const endpoint = await webhooks.updateEndpoint(needId(), { enabled: action === 'enable' }, 'cli');
      out(`Endpoint ${endpoint.id} ${action}d.`);
      return;
    }
    case 'rotate': {
      const endpoint = await webhooks.rotateSecret(needId(), 'cli');
      out(
        `Endpoint ${endpoint.id} has a new secret; the previous one keeps signing beside it until ${endpoint.previousSecretExpiresAt}. Shown only now:`,
      );
      out(endpoint.secret);
      return;
    }
    case 'test': {
      const { eventId } = await webhooks.sendTestEvent(needId(), 'cli');
      out(`Test event ${eventId} queued; a running server sends it within a second. See: npm run outbox -- webhook deliveries ${argument}`);
      return;
    }
    case 'deliveries': {
      const { data } = await webhooks.listDeliveries(needId(), { limit: 20 });
      if (data.length === 0) out('No deliveries yet.');
      for (const delivery of data) {
        const next = delivery.nextAttemptAt ? `, next attempt ${delivery.nextAttemptAt}` : '';
        out(
          `${delivery.createdAt}  ${delivery.eventType}  ${delivery.eventId}  ${delivery.state}${next}${delivery.mailId ? `  mail ${delivery.mailId}` : ''}`,
        );
        for (const attempt of delivery.attempts)
          out(
            `    ${attempt.at}  ${attempt.httpStatus ?? '—'}  ${attempt.durationMs} ms  ${attempt.error ?? attempt.response.slice(0, 80).replace(/\s+/g, ' ')}`,
          );
      }
      return;
    }
    default:
      throw new WebhookUsageError(`Unknown command "webhook ${action ?? ''}".\n\n${WEBHOOK_USAGE}`);
  }
}
