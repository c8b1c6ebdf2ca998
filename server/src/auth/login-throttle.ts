/**
 * Login limits (ARCHITECTURE.md#security and §7, issue 11 items 1–2), shaped so that a stranger can slow an operator
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
 * Kept in memory per instance: a restart forgets, which only ever errs towards letting an operator back in.
 */
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
  maxKeys: 50_000,
};

export type LoginLimit = 'pair' | 'client';

/** An attempt that was let through: counted already, to be settled with `succeeded` when it turns out right. */
export interface LoginAttempt {
  readonly client: string;
  readonly username: string;
  /** How long to wait before checking the password, because the name is under attack. */
  readonly delayMs: number;
}

export type LoginAdmission = { allowed: true; attempt: LoginAttempt } | { allowed: false; limit: LoginLimit; retryAfterMs: number };

interface Window {
  startedAt: number;
  failures: number;
}

/** A Map that forgets its oldest entry when full. Maps iterate in insertion order. */
class BoundedMap<V> extends Map<string, V> {
  constructor(private readonly maxKeys: number) {
    super();
  }
  override set(key: string, value: V): this {
    if (!this.has(key) && this.size >= this.maxKeys) {
      const oldest = this.keys().next().value;
      if (oldest !== undefined) this.delete(oldest);
    }
    return super.set(key, value);
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
    this.windows = new BoundedMap(this.options.maxKeys);
    this.trusted = new BoundedMap(this.options.maxKeys);
  }

  /**
   * Admits an attempt and counts it at once (synchronously: nothing can slip between the check and the
   * count), or refuses it when this address or this (name, address) pair is over its limit. A refused
   * attempt is not counted: the window ends when it ends, however long a client keeps knocking.
   */
  begin(client: string, username: string): LoginAdmission {
    const name = username.toLowerCase();
    const pairKey = `pair:${name}\n${client}`;
    const clientKey = `client:${client}`;
    const userKey = `user:${name}`;
    const pairWait = this.blockedFor(pairKey, this.options.maxFailuresPerPair);
    const clientWait = this.blockedFor(clientKey, this.options.maxFailuresPerClient);
    if (pairWait > 0 || clientWait > 0) {
      return { allowed: false, limit: pairWait >= clientWait ? 'pair' : 'client', retryAfterMs: Math.max(pairWait, clientWait) };
    }
    const earlierFailures = this.current(userKey)?.failures ?? 0;
    this.bump(pairKey);
    this.bump(clientKey);
    this.bump(userKey);
    const delayMs = this.isTrusted(name, client) ? 0 : this.delayAfter(earlierFailures);
    return { allowed: true, attempt: { client, username, delayMs } };
  }

  /** The attempt was right: give its count back, clear this pair, and stop slowing this address for the name. */
  succeeded(attempt: LoginAttempt): void {
    const name = attempt.username.toLowerCase();
    this.windows.delete(`pair:${name}\n${attempt.client}`);
    this.refund(`client:${attempt.client}`);
    this.refund(`user:${name}`);
    this.trusted.delete(`${name}\n${attempt.client}`);
    this.trusted.set(`${name}\n${attempt.client}`, this.now() + this.options.windowMs);
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
