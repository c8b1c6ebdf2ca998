/**
 * One envelope per recipient (docs/bounces.md#what-is-matched): with BOUNCE_DOMAIN set, each recipient's copy carries
 * its own return path, so a bounce or complaint names the one recipient it is about. The same stored bytes go to
 * each (one Message-ID), one SMTP transaction each, over the same pooled connections; their answers are combined
 * into the one outcome the worker records for the attempt, recipient by recipient (outcome-policy.ts).
 */
import type { DeliveryOutcome, RecipientResult, RelayMessage, RelayTransport } from './relay-transport.js';

/** Sends `raw` to each of `to` in an envelope of its own, from `fromOf(address)`, at once; answers the combined outcome. */
export async function sendOnePerRecipient(
  transport: RelayTransport,
  message: { raw: RelayMessage['raw']; to: string[]; fromOf: (address: string) => string },
): Promise<DeliveryOutcome> {
  const started = performance.now();
  const outcomes = await Promise.all(
    message.to.map(async (address) => ({
      address,
      outcome: await transport.send({ envelope: { from: message.fromOf(address), to: [address] }, raw: message.raw }),
    })),
  );
  return combineOutcomes(outcomes, performance.now() - started);
}

/**
 * The attempt's outcome from its recipients' own: sent when any copy was accepted (the others listed as refused or
 * deferred); else rejected when every copy was refused for good; unreachable when no copy reached the relay; else
 * deferred. A message the client cannot send at all is invalid for every copy alike.
 */
export function combineOutcomes(
  outcomes: ReadonlyArray<{ address: string; outcome: DeliveryOutcome }>,
  durationMs: number,
): DeliveryOutcome {
  const invalid = outcomes.find((o) => o.outcome.kind === 'invalid');
  if (invalid) return invalid.outcome;
  if (outcomes.length === 1) return outcomes[0]!.outcome;
  const recipients: RecipientResult[] = outcomes.map(({ address, outcome }) => {
    switch (outcome.kind) {
      case 'sent':
        // A one-recipient envelope the relay took: that recipient is accepted (a refusal would have failed DATA).
        return { address, outcome: 'accepted', reply: outcome.reply };
      case 'rejected':
        return { address, outcome: 'rejected', reply: outcome.recipients?.[0]?.reply ?? outcome.reply };
      case 'deferred':
        return {
          address,
          outcome: outcome.recipients?.[0]?.outcome === 'rejected' ? 'rejected' : 'deferred',
          reply: outcome.recipients?.[0]?.reply ?? outcome.reply,
        };
      default:
        return { address, outcome: 'deferred', reply: outcome.reply };
    }
  });
  const accepted = recipients.filter((r) => r.outcome === 'accepted');
  const firstSent = outcomes.find((o) => o.outcome.kind === 'sent');
  if (firstSent && firstSent.outcome.kind === 'sent')
    return {
      kind: 'sent',
      reply: firstSent.outcome.reply,
      accepted: accepted.map((r) => r.address),
      rejected: recipients.filter((r) => r.outcome !== 'accepted').map((r) => r.address),
      recipients,
      durationMs,
    };
  if (recipients.every((r) => r.outcome === 'rejected')) {
    const first = outcomes.find((o) => o.outcome.kind === 'rejected')?.outcome;
    return {
      kind: 'rejected',
      code: first && 'code' in first ? first.code : 550,
      reply: first?.reply ?? recipients[0]!.reply,
      recipients,
      durationMs,
    };
  }
  const unreachable = outcomes.filter((o) => o.outcome.kind === 'unreachable');
  if (unreachable.length === outcomes.length) return { kind: 'unreachable', reply: unreachable[0]!.outcome.reply, durationMs };
  const deferred = outcomes.find((o) => o.outcome.kind === 'deferred')?.outcome;
  return {
    kind: 'deferred',
    code: deferred && 'code' in deferred ? deferred.code : 451,
    reply: deferred?.reply ?? recipients.find((r) => r.outcome === 'deferred')!.reply,
    recipients,
    durationMs,
  };
}
