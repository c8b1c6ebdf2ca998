/**
 * One mail's way out along its route (relay-router.ts gives it): the relays in order, past those down or at their
 * daily quota, each send paced, sent again to the same relay after a throttling reply, and moved on to the next relay
 * when the answer says the relay did not take it (relay-health-tracker.ts decides), all within the one attempt the
 * claim counted.
 */
import { performance } from 'node:perf_hooks';
import { giveBackToday, reserveToday, type RelayHandle } from './relay-handle.js';
import type { RelayHealthTracker } from './relay-health-tracker.js';
import { hasThrottledRecipients, isThrottlingOutcome, MAX_THROTTLED_RESENDS } from './relay-throttling.js';
import type { DeliveryOutcome, RelayMessage, RelayTransport } from './relay-transport.js';

/**
 * Where one attempt went, for its event: the relay that answered and those passed over on the way (only when routes
 * exist), and how many throttling replies it was sent again after.
 */
export interface RelayTrail {
  relay?: string;
  passedOver?: Array<{ relay: string; reply: string }>;
  throttled?: number;
}

/** One mail's way out: a transport that fails over along the mail's route, and what happened on the way. */
export interface RoutedSend {
  transport: RelayTransport;
  /** Undefined when there is nothing to tell (no routes, no throttling). */
  trail(): RelayTrail | undefined;
}

/** What every attempt shares with its router: the relays' health, and whether the router closed. */
export interface AttemptContext {
  health: RelayHealthTracker;
  isClosed(): boolean;
}

/** The outcome of a mail the router let go of without sending it: the worker is stopping. */
const closedOutcome: DeliveryOutcome = {
  kind: 'unreachable',
  reply: 'Not sent: the worker stopped while the relay’s rate held the mail back',
  durationMs: 0,
  beforeTransaction: true,
};

/**
 * One mail's way along its route, and what happened on the way: its own transport (a class, so that the send path
 * of every mail allocates one object, not a closure per step). `named`: routes exist, so the trail names the
 * relays (the events say which relay took each attempt); without routes only throttling is told.
 */
export class RoutedAttempt implements RoutedSend, RelayTransport {
  private answered: string[] | undefined;
  private passedOver: Array<{ relay: string; reply: string }> | undefined;
  private throttled = 0;

  constructor(
    private readonly route: RelayHandle[],
    private readonly named: boolean,
    private readonly router: AttemptContext,
  ) {}

  get transport(): RelayTransport {
    return this;
  }

  private answeredBy(handle: RelayHandle): void {
    if (!this.named) return;
    this.answered ??= [];
    if (!this.answered.includes(handle.name)) this.answered.push(handle.name);
  }

  private passOver(relay: string, reply: string): void {
    (this.passedOver ??= []).push({ relay, reply });
  }

  async send(message: RelayMessage): Promise<DeliveryOutcome> {
    const { route, router } = this;
    const now = performance.now();
    const usable = route.length === 1 ? route : route.filter((h) => !h.down || (!h.probing && now >= h.probeAt));
    // Every relay of the route down: tried in order all the same, and the attempt counts as it always did.
    const candidates = usable.length > 0 ? usable : route;
    let last: DeliveryOutcome | undefined;
    for (const handle of candidates) {
      let resends = 0;
      for (;;) {
        // A daily quota reached: the relay is passed over like a down one, until the next UTC day.
        if (!reserveToday(handle)) {
          const reply = `Not sent: relay ${handle.name} took its ${handle.maxPerDay} messages of the day (maxPerDay)`;
          last = { kind: 'deferred', code: 451, reply: `451 4.7.0 ${reply}`, durationMs: 0 };
          this.passOver(handle.name, reply);
          break;
        }
        const day = handle.day;
        if (handle.pacer.perSecond !== null) await handle.pacer.take();
        if (router.isClosed()) {
          giveBackToday(handle, day);
          return closedOutcome;
        }
        const wasProbe = handle.down && !handle.probing && performance.now() >= handle.probeAt;
        if (wasProbe) handle.probing = true;
        const startedAt = performance.now();
        handle.starts.push(startedAt);
        const outcome = await handle.transport.send(message);
        // Only what the relay took counts against its day.
        if (outcome.kind !== 'sent') giveBackToday(handle, day);
        const isThrottle = isThrottlingOutcome(outcome);
        router.health.record(handle, outcome, startedAt, isThrottle || hasThrottledRecipients(outcome));
        const moveOn = router.health.observe(handle, outcome, wasProbe, isThrottle);
        router.health.refreshState(handle);
        // A throttle: the same mail again, to the same relay, once its lowered rate lets it (within this attempt).
        if (isThrottle && !moveOn && resends < MAX_THROTTLED_RESENDS && !router.isClosed()) {
          resends += 1;
          this.throttled += 1;
          continue;
        }
        if (!moveOn) {
          this.answeredBy(handle);
          return outcome;
        }
        this.passOver(handle.name, outcome.reply);
        last = outcome;
        break;
      }
    }
    this.answeredBy(candidates.at(-1)!);
    return last!;
  }

  verify(): Promise<boolean> {
    return this.route[0]!.transport.verify();
  }

  async close(): Promise<void> {}

  trail(): RelayTrail | undefined {
    if (!this.named) return this.throttled > 0 ? { throttled: this.throttled } : undefined;
    return {
      relay: (this.answered ?? []).join(', '),
      ...(this.passedOver ? { passedOver: this.passedOver } : {}),
      ...(this.throttled > 0 ? { throttled: this.throttled } : {}),
    };
  }
}
