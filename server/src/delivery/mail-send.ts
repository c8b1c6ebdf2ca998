/**
 * One claimed mail's send (worker.ts starts it in a free slot): the recipients on the suppression list left out, the
 * relay the router picks (or the worker's one transport), and, with a return path per recipient, an envelope per
 * recipient (per-recipient-send.ts). It never touches the mail's status: the outcome goes to the outcome commit.
 */
import type { Clock } from '../clock.js';
import type { Store } from '../store/connection.js';
import { suppressionCheckFor } from '../suppression/suppression-check.js';
import { suppressedAmong } from '../suppression/suppression.repository.js';
import type { ClaimedMail, DeliveryPayload } from './delivery.repository.js';
import { sendOnePerRecipient } from './per-recipient-send.js';
import type { RelayRouter } from './relay-router.js';
import type { DeliveryOutcome, RecipientResult, RelayTransport } from './relay-transport.js';
import type { RelayTrail } from './routed-attempt.js';

export interface MailSenderOptions {
  store: Store;
  clock: Clock;
  /** The default relay; the only one without a router. */
  transport: RelayTransport;
  router?: RelayRouter | undefined;
  /** One recipient's return path (DeliveryWorkerOptions.returnPath); unset: one envelope for all. */
  returnPath?: ((mailId: number, recipient: number) => string) | undefined;
}

/** A payload that can be sent: its message is stored and some recipient is still open. */
export type SendablePayload = DeliveryPayload & { raw: Buffer };

/** An attempt's outcome and, when the router has something to tell, where it went. */
export interface SentAttempt {
  outcome: DeliveryOutcome;
  trail?: RelayTrail | undefined;
}

export function isSendable(payload: DeliveryPayload | undefined): payload is SendablePayload {
  return !!payload?.raw && payload.envelopeTo.length > 0;
}

/** The outcome of a mail that cannot be sent at all: no message stored, or no recipient left. */
export function unsendableOutcomeOf(payload: DeliveryPayload | undefined): DeliveryOutcome {
  return {
    kind: 'invalid',
    reply: payload?.raw ? 'The mail has no recipients.' : 'No message content is stored for this mail.',
    durationMs: 0,
  };
}

export function createMailSender(options: MailSenderOptions) {
  const { store, clock, transport, returnPath } = options;
  const suppressions = suppressionCheckFor(store);

  /**
   * The targets on the suppression list now, each as its recipient's outcome. Asked only while the list may hold
   * anything (suppression-check.ts: an empty list is remembered for 5 s, and an add in this process is seen at once).
   */
  async function suppressedTargets(targets: string[]): Promise<Map<string, RecipientResult>> {
    const found = new Map<string, RecipientResult>();
    if (!(await suppressions.mayHaveAny())) return found;
    const rows = await suppressedAmong(store.db, targets, clock.now());
    for (const address of targets) {
      const row = rows.get(address.trim().toLowerCase());
      if (row)
        found.set(address, {
          address,
          outcome: 'suppressed',
          reply: `Not sent: on the suppression list since ${new Date(Number(row.created_at)).toISOString()} (${row.reason}).`,
        });
    }
    return found;
  }

  return {
    async send(mail: ClaimedMail, payload: SendablePayload): Promise<SentAttempt> {
      const raw = payload.raw;
      // An address suppressed since the mail was accepted (a complaint, a hard bounce, an operator) is not sent to.
      const suppressed = await suppressedTargets(payload.envelopeTo);
      const to = payload.envelopeTo.filter((address) => !suppressed.has(address));
      if (to.length === 0) {
        return {
          outcome: {
            kind: 'rejected',
            code: 550,
            reply: 'Not sent: every recipient left is on the suppression list.',
            recipients: [...suppressed.values()],
            durationMs: 0,
          },
        };
      }
      // The first matching route's relays, with failover (relay-router.ts); no route in the store: the default relay,
      // through the router too (its health and throttling); no router: `transport` alone.
      const routed = await options.router?.route({
        apiKeyId: mail.api_key_id,
        lane: mail.lane,
        sender: payload.envelopeFrom,
        recipients: to,
      });
      const via = routed?.transport ?? transport;
      let outcome = returnPath
        ? await sendOnePerRecipient(via, {
            raw,
            to,
            fromOf: (address) =>
              returnPath(
                mail.id,
                payload.recipients.findIndex((r) => r.address === address),
              ),
          })
        : await via.send({ envelope: { from: payload.envelopeFrom, to }, raw });
      const trail = routed?.trail();
      if (suppressed.size > 0 && 'recipients' in outcome)
        outcome = { ...outcome, recipients: [...(outcome.recipients ?? []), ...suppressed.values()] };
      return { outcome, trail };
    },
  };
}

export type MailSender = ReturnType<typeof createMailSender>;
