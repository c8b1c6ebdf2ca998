/**
 * Login limits (ARCHITECTURE.md#security and §7), shaped so that a stranger can slow an operator
 * down but never lock them out:
 * - A hard limit per (name, client address) and per client address: past it, 429 with Retry-After. These
 *   stop one client guessing, and only ever refuse the client that made the failures.
 * - No hard limit per name. A name that fails from many addresses is slowed instead: each further attempt
 *   for it waits a delay that doubles per failure, up to a few seconds. The real operator, with the right
 *   password, waits at most that cap, however many addresses the attack uses. An address that logged in as
 *   that name before (in this window) is not slowed for it at all.
 * - Every attempt counts when it starts, before the slow password check, so 40 guesses sent at once meet
 *   the same limit as 40 sent one after another. A success gives its own attempt back and clears its
 *   (name, address) counter; it never clears what other addresses did.
 * Clients and names:
 * - An IPv6 client is counted by its /64: one host is given a whole /64, so a per-address count would give
 *   it unlimited addresses. IPv4-mapped IPv6 is counted as the IPv4 address.
 * - A slowed name's attempts are also serialised (a token bucket per name): each waits for its turn, at most
 *   one per `nameIntervalMs`, so guesses sent in parallel are no faster than guesses sent one by one. An
 *   attempt whose turn would be more than `maxNameQueueMs` away is refused (429) instead of holding a
 *   request open. An address that logged in as the name before is exempt, as from the delay.
 * - Past `maxKeys`, expired windows go first; a live `user:` counter is the last thing forgotten.
 * Kept in memory per instance: a restart forgets, which only ever errs towards letting an operator back in.
 */
import ipaddr from 'ipaddr.js';
export interface LoginThrottleOptions {
  windowMs: number;
  /** Failures of one name from one address before that pair gets 429s. */
  maxFailuresPerPair: number;
  /** Failures from one address, whatever the names, before it gets 429s. */
  maxFailuresPerClient: number;
  /** Failures of one name, from any address, before its attempts are slowed (never refused). */
  maxFailuresPerUsername: number;
  /** The first slowed attempt waits this long; each further failure doubles it, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A slowed name's attempts are checked one per this many ms at most, however many arrive together. */
  nameIntervalMs: number;
  /** A slowed name's attempt that would wait longer than this for its turn is refused (429). */
  maxNameQueueMs: number;
  /** Upper bound on remembered keys, so a flood of random usernames cannot grow memory without end. */
  maxKeys: number;
}

const defaults: LoginThrottleOptions = {
  windowMs: 15 * 60_000,
  maxFailuresPerPair: 10,
  maxFailuresPerClient: 30,
  maxFailuresPerUsername: 10,
  baseDelayMs: 250,
  maxDelayMs: 4_000,
  nameIntervalMs: 250,
  maxNameQueueMs: 30_000,
  maxKeys: 50_000,
};

export type LoginLimit = 'pair' | 'client' | 'name';

/** An attempt that was let through: counted already, to be settled with `succeeded` when it turns out right. */
export interface LoginAttempt {
  readonly client: string;
  /** What the limits count the client as: the address, or its /64 for IPv6. */
  readonly clientKey: string;
  readonly username: string;
  /** How long to wait before checking the password, because the name is under attack. */
  readonly delayMs: number;
}

export type LoginAdmission = { allowed: true; attempt: LoginAttempt } | { allowed: false; limit: LoginLimit; retryAfterMs: number };

interface Window {
  startedAt: number;
  failures: number;
  /** `user:` windows of a slowed name: when the next attempt's turn comes (the token bucket). */
  nextTurnAt?: number;
}

/** The key a client address is counted by: an IPv6 address by its /64, an IPv4-mapped one as IPv4. */
export function clientKeyOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

/**
 * A Map with a bound on its keys, whose entries end at a time (`endOf`) that grows with insertion order
 * (windows and trusted pairs are inserted when they start, and re-inserted when they start again). When full,
 * it forgets the ended entries first, which sit at the front; only when none has ended does it forget a live
 * one, the oldest that `isPrecious` does not protect (then the oldest of all).
 */
class BoundedMap<V> extends Map<string, V> {
  constructor(
    private readonly maxKeys: number,
    private readonly endOf: (value: V) => number,
    private readonly now: () => number,
    private readonly isPrecious: (key: string) => boolean = () => false,
  ) {
    super();
  }
  override set(key: string, value: V): this {
    if (!this.has(key) && this.size >= this.maxKeys) this.makeRoom();
    return super.set(key, value);
  }
  private makeRoom(): void {
    const now = this.now();
    for (const [key, value] of this) {
      if (this.endOf(value) > now) break;
      this.delete(key);
    }
    if (this.size < this.maxKeys) return;
    let oldest: string | undefined;
    for (const key of this.keys()) {
      oldest ??= key;
      if (!this.isPrecious(key)) {
        this.delete(key);
        return;
      }
    }
    if (oldest !== undefined) this.delete(oldest);
  }
}

export class LoginThrottle {
  private readonly options: LoginThrottleOptions;
  private readonly windows: BoundedMap<Window>;
  /** `name\naddress` pairs that logged in, until when: their attempts for that name are not slowed. */
  private readonly trusted: BoundedMap<number>;

  constructor(
    private readonly now: () => number,
    options: Partial<LoginThrottleOptions> = {},
  ) {
    this.options = { ...defaults, ...options };
    const windowMs = this.options.windowMs;
    this.windows = new BoundedMap<Window>(
      this.options.maxKeys,
      (window) => window.startedAt + windowMs,
      now,
      (key) => key.startsWith('user:'),
    );
    this.trusted = new BoundedMap<number>(this.options.maxKeys, (until) => until, now);
  }

  /**
   * Admits an attempt and counts it at once (synchronously: nothing can slip between the check and the
   * count), or refuses it when this address or this (name, address) pair is over its limit. A refused
   * attempt is not counted: the window ends when it ends, however long a client keeps knocking.
   */
  begin(client: string, username: string): LoginAdmission {
    const name = username.toLowerCase();
    const counted = clientKeyOf(client);
    const pairKey = `pair:${name}\n${counted}`;
    const clientKey = `client:${counted}`;
    const userKey = `user:${name}`;
    const pairWait = this.blockedFor(pairKey, this.options.maxFailuresPerPair);
    const clientWait = this.blockedFor(clientKey, this.options.maxFailuresPerClient);
    if (pairWait > 0 || clientWait > 0) {
      return { allowed: false, limit: pairWait >= clientWait ? 'pair' : 'client', retryAfterMs: Math.max(pairWait, clientWait) };
    }
    const earlierFailures = this.current(userKey)?.failures ?? 0;
    const isTrusted = this.isTrusted(name, counted);
    const penaltyMs = isTrusted ? 0 : this.delayAfter(earlierFailures);
    let delayMs = penaltyMs;
    if (!isTrusted && earlierFailures >= this.options.maxFailuresPerUsername) {
      // The name is under attack: this attempt takes the next turn (after its own delay), one per interval.
      const window = this.current(userKey);
      const now = this.now();
      const turn = Math.max(now + penaltyMs, window?.nextTurnAt ?? 0);
      if (turn - now > this.options.maxNameQueueMs) {
        return { allowed: false, limit: 'name', retryAfterMs: turn - now - this.options.maxNameQueueMs };
      }
      if (window) window.nextTurnAt = turn + this.options.nameIntervalMs;
      delayMs = turn - now;
    }
    this.bump(pairKey);
    this.bump(clientKey);
    this.bump(userKey);
    return { allowed: true, attempt: { client, clientKey: counted, username, delayMs } };
  }

  /** The attempt was right: give its count back, clear this pair, and stop slowing this address for the name. */
  succeeded(attempt: LoginAttempt): void {
    const name = attempt.username.toLowerCase();
    this.windows.delete(`pair:${name}\n${attempt.clientKey}`);
    this.refund(`client:${attempt.clientKey}`);
    this.refund(`user:${name}`);
    this.trusted.delete(`${name}\n${attempt.clientKey}`);
    this.trusted.set(`${name}\n${attempt.clientKey}`, this.now() + this.options.windowMs);
  }

  /** How many keys are remembered (windows and trusted pairs): for tests of the bound. */
  get size(): number {
    return this.windows.size + this.trusted.size;
  }

  private delayAfter(failures: number): number {
    const over = failures - this.options.maxFailuresPerUsername;
    if (over < 0) return 0;
    // 2 ** over grows past any cap long before it overflows; min() keeps it there.
    return Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** Math.min(over, 30));
  }

  private isTrusted(name: string, client: string): boolean {
    const key = `${name}\n${client}`;
    const until = this.trusted.get(key);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.trusted.delete(key);
    return false;
  }

  /** The key's window while it runs; an ended one is forgotten. */
  private current(key: string): Window | undefined {
    const window = this.windows.get(key);
    if (!window) return undefined;
    if (window.startedAt + this.options.windowMs <= this.now()) {
      this.windows.delete(key);
      return undefined;
    }
    return window;
  }

  /** Milliseconds until the key's window ends when it has reached `max` failures, else 0. */
  private blockedFor(key: string, max: number): number {
    const window = this.current(key);
    if (!window || window.failures < max) return 0;
    return window.startedAt + this.options.windowMs - this.now();
  }

  private bump(key: string): void {
    const window = this.current(key);
    if (window) window.failures += 1;
    else this.windows.set(key, { startedAt: this.now(), failures: 1 });
  }

  private refund(key: string): void {
    const window = this.current(key);
    if (window && window.failures > 0) window.failures -= 1;
  }
}
