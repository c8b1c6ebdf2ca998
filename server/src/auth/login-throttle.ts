/**
 * Failed logins are limited per client address and per username (PRODUCT.md §2/§5), so that neither one
 * client trying many names nor many clients trying one name get far. Kept in memory per instance: a
 * restart forgets, which only ever errs towards letting an operator back in.
 */
export interface LoginThrottleOptions {
  windowMs: number;
  maxFailuresPerUsername: number;
  maxFailuresPerClient: number;
  /** Upper bound on remembered keys, so a flood of random usernames cannot grow memory without end. */
  maxKeys: number;
}

const defaults: LoginThrottleOptions = {
  windowMs: 15 * 60_000,
  maxFailuresPerUsername: 10,
  maxFailuresPerClient: 30,
  maxKeys: 50_000,
};

interface Window {
  startedAt: number;
  failures: number;
}

export class LoginThrottle {
  private readonly options: LoginThrottleOptions;
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly now: () => number,
    options: Partial<LoginThrottleOptions> = {},
  ) {
    this.options = { ...defaults, ...options };
  }

  /** Milliseconds until a new attempt is allowed, or 0 when it is allowed now. */
  retryAfterMs(client: string, username: string): number {
    return Math.max(
      this.blockedFor(`client:${client}`, this.options.maxFailuresPerClient),
      this.blockedFor(`user:${username.toLowerCase()}`, this.options.maxFailuresPerUsername),
    );
  }

  recordFailure(client: string, username: string): void {
    this.bump(`client:${client}`);
    this.bump(`user:${username.toLowerCase()}`);
  }

  recordSuccess(client: string, username: string): void {
    this.windows.delete(`user:${username.toLowerCase()}`);
    this.windows.delete(`client:${client}`);
  }

  private blockedFor(key: string, max: number): number {
    const window = this.windows.get(key);
    if (!window) return 0;
    const endsAt = window.startedAt + this.options.windowMs;
    const now = this.now();
    if (endsAt <= now) {
      this.windows.delete(key);
      return 0;
    }
    return window.failures >= max ? endsAt - now : 0;
  }

  private bump(key: string): void {
    const now = this.now();
    const window = this.windows.get(key);
    if (window && window.startedAt + this.options.windowMs > now) {
      window.failures += 1;
      return;
    }
    if (this.windows.size >= this.options.maxKeys) {
      // Maps iterate in insertion order: drop the oldest window.
      const oldest = this.windows.keys().next().value;
      if (oldest !== undefined) this.windows.delete(oldest);
    }
    this.windows.set(key, { startedAt: now, failures: 1 });
  }
}
