/**
 * Operators, their sessions (tokens) and the API keys applications submit mail with. Tokens and keys are
 * 256-bit random secrets; only their SHA-256 is stored. Passwords are argon2id hashes (password.ts).
 */
import type { Lane } from '@outbox/contract';
import type { Clock } from '../clock.js';
import { badRequest, conflict, notFound, RateLimitError, unauthorized } from '../errors.js';
import type { Store } from '../store/connection.js';
import { insertAuditEntries } from '../audit/audit.repository.js';
import { LoginThrottle, type LoginLimit } from './login-throttle.js';
import * as repo from './operator.repository.js';
import { createApplicationService } from '../applications/application.service.js';
import { findApiKeyByHash, findApplicationRowByName, recordApplicationUse } from '../applications/application.repository.js';
import {
  createHashingLimit,
  createSecret,
  DEFAULT_PASSWORD_COST,
  getDummyHash,
  hashPassword,
  hashSecret,
  needsRehash,
  randomPassword,
  verifyPassword,
} from './password.js';

export interface Operator {
  id: number;
  username: string;
}

export interface IssuedSession {
  token: string;
  username: string;
  expiresAt: string;
}

export interface ApiKeyPrincipal {
  id: number;
  name: string;
  /** The application's lane (LANE_CODES in contract/): its mails' lane unless a mail names its own. */
  lane: number;
}

export interface AuthServiceOptions {
  store: Store;
  clock: Clock;
  sessionTtlSeconds: number;
  throttle?: LoginThrottle;
  /** Told when an attempt is made to wait because its name failed from many addresses (for logs and metrics). */
  onLoginSlowed?: (event: { username: string; client: string; delayMs: number }) => void;
  /** argon2id's memory in KiB for new hashes (password.ts, DEFAULT_PASSWORD_COST); tests choose less to run fast. */
  passwordCost?: number;
  /** Password hashes computed at once; more wait their turn (password.ts, createHashingLimit). */
  maxConcurrentHashes?: number;
}

/** A login refused by the limits before any password check; `limit` says which one (for logs and metrics). */
export class LoginLimitError extends RateLimitError {
  constructor(
    readonly limit: LoginLimit,
    retryAfterSeconds: number,
  ) {
    super(
      'too_many_login_attempts',
      limit === 'name'
        ? `Too many logins for this name are waiting their turn; try again in ${retryAfterSeconds} seconds.`
        : `Too many failed logins ${limit === 'pair' ? 'for this name ' : ''}from this address; try again in ${retryAfterSeconds} seconds.`,
      retryAfterSeconds,
    );
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * How often a key's `last_used_at` is written: at most once this long per key (by any instance), so a busy
 * application costs one write a minute rather than one per submission.
 */
export const API_KEY_USE_RECORD_MS = 60_000;

export const OPERATOR_NAME_PATTERN = /^[A-Za-z0-9._@-]{1,64}$/;

/** The change-feed type that says sessions were revoked (logout, password change, operator removed). */
export const SESSIONS_REVOKED = 'sessions-revoked';

export function createAuthService({
  store,
  clock,
  sessionTtlSeconds,
  throttle,
  onLoginSlowed,
  passwordCost = DEFAULT_PASSWORD_COST,
  maxConcurrentHashes = 2,
}: AuthServiceOptions) {
  const { db } = store;
  const loginThrottle = throttle ?? new LoginThrottle(() => clock.now());
  const withHashingSlot = createHashingLimit(maxConcurrentHashes);
  const hashNew = (password: string) => withHashingSlot(() => hashPassword(password, passwordCost));
  const verify = (password: string, stored: string | undefined) =>
    withHashingSlot(async () => verifyPassword(password, stored ?? (await getDummyHash(passwordCost))));

  const applications = createApplicationService({ store, clock });

  const invalidCredentials = () => unauthorized('invalid_credentials', 'Invalid username or password.');

  /**
   * Checks a name and password from `client` (the address the HTTP layer trusts). The attempt is counted
   * before anything is awaited (see login-throttle.ts); a name under attack from many addresses is answered
   * after a delay instead of being refused.
   */
  async function login(username: string, password: string, client: string): Promise<IssuedSession> {
    const admission = loginThrottle.begin(client, username);
    if (!admission.allowed) throw new LoginLimitError(admission.limit, Math.max(1, Math.ceil(admission.retryAfterMs / 1000)));
    const { attempt } = admission;
    if (attempt.delayMs > 0) {
      onLoginSlowed?.({ username, client, delayMs: attempt.delayMs });
      await sleep(attempt.delayMs);
    }
    const operator = await repo.findOperatorByUsername(db, username);
    // Unknown users cost the same hashing work as a wrong password: the answer and its timing match.
    const isValid = await verify(password, operator?.password_hash);
    if (!operator || !isValid) {
      // The audit log keeps failed logins beside the successful ones (docs/api.md, "Audit log"). Bounded by the login
      // throttle above: a client or name past its limit is refused before this point and writes nothing. A name
      // that is no operator's is not written: it is often a password typed in the wrong field.
      await insertAuditEntries(db, [
        operator
          ? { at: clock.now(), actor: `client:${client}`, action: 'login.failed', target: `operator:${operator.username}` }
          : { at: clock.now(), actor: `client:${client}`, action: 'login.failed', target: null, after: { reason: 'unknown user name' } },
      ]);
      // The HTTP layer logs an unknown name cut short: it may be a password typed in the wrong field.
      throw Object.assign(invalidCredentials(), { isKnownName: operator !== undefined });
    }
    loginThrottle.succeeded(attempt);
    // A hash made with less work than today's is replaced now that the password is known (password.ts).
    if (needsRehash(operator.password_hash, passwordCost)) {
      await repo.replaceOperatorPasswordHash(db, operator.id, operator.password_hash, await hashNew(password));
    }
    const now = clock.now();
    const { secret, hash } = createSecret();
    const expiresAt = now + sessionTtlSeconds * 1000;
    await db.transaction().execute(async (trx) => {
      await repo.insertSession(trx, { tokenHash: hash, operatorId: operator.id, now, expiresAt });
      await insertAuditEntries(trx, [{ at: now, actor: `operator:${operator.username}`, action: 'login', target: null }]);
    });
    return { token: secret, username: operator.username, expiresAt: new Date(expiresAt).toISOString() };
  }

  /** The operator holding this token, or undefined when it is unknown, expired or revoked. */
  async function findOperatorByToken(token: string): Promise<Operator | undefined> {
    if (!token) return undefined;
    const session = await repo.findActiveSession(db, hashSecret(token), clock.now());
    return session ? { id: session.operator_id, username: session.username } : undefined;
  }

  /** Deletes sessions past their expiry (the retention job calls it); answers how many went. */
  async function purgeExpiredSessions(): Promise<number> {
    return repo.deleteExpiredSessions(db, clock.now());
  }

  /**
   * Sessions were revoked: live event streams (live/live-hub.ts) check their tokens again now, here and on
   * every other instance of the same PostgreSQL store, instead of at their next periodic check.
   */
  function announceRevoked(): void {
    store.changes.publish({ type: SESSIONS_REVOKED, ids: [] });
  }

  async function logout(token: string, operator: Operator): Promise<void> {
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      await repo.revokeSession(trx, hashSecret(token), now);
      await insertAuditEntries(trx, [{ at: now, actor: `operator:${operator.username}`, action: 'logout' }]);
    });
    announceRevoked();
  }

  function assertOperatorName(username: string): void {
    if (!OPERATOR_NAME_PATTERN.test(username)) {
      throw badRequest('invalid_username', 'username must be 1 to 64 letters, digits or . _ @ -');
    }
  }

  function assertPassword(password: string): void {
    if (password.length < 8) throw badRequest('weak_password', 'password must be at least 8 characters long');
  }

  async function addOperator(username: string, password: string, actor = 'cli'): Promise<void> {
    assertOperatorName(username);
    assertPassword(password);
    const passwordHash = await hashNew(password);
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      if (await repo.findOperatorByUsername(trx, username)) {
        throw conflict('operator_exists', `An operator named ${username} exists already.`);
      }
      await repo.insertOperator(trx, username, passwordHash, now);
      await insertAuditEntries(trx, [{ at: now, actor, action: 'operator.add', target: username }]);
    });
  }

  async function setOperatorPassword(username: string, password: string, actor = 'cli'): Promise<void> {
    assertPassword(password);
    const passwordHash = await hashNew(password);
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      const operator = await repo.findOperatorByUsername(trx, username);
      if (!operator) throw notFound('operator_not_found', `No operator is named ${username}.`);
      await repo.updateOperatorPassword(trx, username, passwordHash, now);
      await repo.revokeOperatorSessions(trx, operator.id, now);
      await insertAuditEntries(trx, [{ at: now, actor, action: 'operator.passwd', target: username }]);
    });
    announceRevoked();
  }

  async function removeOperator(username: string, actor = 'cli'): Promise<void> {
    const now = clock.now();
    await db.transaction().execute(async (trx) => {
      if (!(await repo.deleteOperator(trx, username))) {
        throw notFound('operator_not_found', `No operator is named ${username}.`);
      }
      await insertAuditEntries(trx, [{ at: now, actor, action: 'operator.remove', target: username }]);
    });
    announceRevoked();
  }

  /**
   * At start (docs/operations.md#the-first-start): OUTBOX_ADMIN_USER/PASSWORD create or reset that operator; with no operator at
   * all and none configured, `admin` is created with a random password, returned so main can print it once.
   */
  async function ensureOperators(admin: {
    username?: string | undefined;
    password?: string | undefined;
  }): Promise<{ createdAdminPassword?: string }> {
    if (admin.username && admin.password) {
      const existing = await repo.findOperatorByUsername(db, admin.username);
      if (existing) {
        if (!(await verify(admin.password, existing.password_hash))) {
          await setOperatorPassword(admin.username, admin.password, 'config');
        }
      } else {
        try {
          await addOperator(admin.username, admin.password, 'config');
        } catch (error) {
          // Instances starting together on one database race to create it; the winner used the same config.
          if (!(await repo.findOperatorByUsername(db, admin.username))) throw error;
        }
      }
      return {};
    }
    if ((await repo.countOperators(db)) > 0) return {};
    const password = randomPassword();
    try {
      await addOperator('admin', password, 'system');
    } catch (error) {
      // Another instance starting at the same moment created it first: that one printed the password.
      if ((await repo.countOperators(db)) > 0) return {};
      throw error;
    }
    return { createdAdminPassword: password };
  }

  /** The command line's `apikey create NAME [--lane LANE]` (and tests): the new key, shown once. */
  async function createApiKey(name: string, actor = 'cli', options: { lane?: Lane } = {}): Promise<string> {
    return (await applications.createApplication(name, actor, options)).key;
  }

  /** The command line's `apikey revoke NAME`: refused at once, here and on every instance. */
  async function revokeApiKey(name: string, actor = 'cli'): Promise<void> {
    await applications.revokeApplicationByName(name, actor);
  }

  /**
   * Moves an application to a lane (docs/lanes.md): its mails accepted from now on go there unless they name their
   * own; mails already waiting keep theirs. Answers the lane it was in.
   */
  function setApiKeyLane(name: string, lane: Lane, actor = 'cli'): Promise<Lane> {
    return applications.setApplicationLane({ name }, lane, actor);
  }

  /** The API key of that name, created when missing (its secret is then thrown away): for the CLI's own submissions. */
  async function ensureApiKeyPrincipal(name: string): Promise<ApiKeyPrincipal> {
    const existing = await findApplicationRowByName(db, name);
    if (existing?.revoked_at === null) return { id: Number(existing.id), name: existing.name, lane: Number(existing.lane) };
    if (existing) throw conflict('api_key_revoked', `The API key ${name} is revoked; its name cannot be used again.`);
    const secret = await createApiKey(name);
    return (await findApiKeyPrincipal(secret))!;
  }

  /**
   * The active application this key belongs to (its current key, or the previous one within a rotation's grace).
   * Asked of the store every time, never cached: a revocation or a grace's end holds at once on every instance
   * (docs/decisions.md#api-keys-looked-up-on-every-request). A use is recorded at most once a minute per key.
   */
  async function findApiKeyPrincipal(key: string): Promise<ApiKeyPrincipal | undefined> {
    if (!key) return undefined;
    const now = clock.now();
    const row = await findApiKeyByHash(db, hashSecret(key), now);
    if (!row) return undefined;
    const id = Number(row.id);
    if (row.last_used_at === null || now - Number(row.last_used_at) >= API_KEY_USE_RECORD_MS) {
      await recordApplicationUse(db, id, now, API_KEY_USE_RECORD_MS);
    }
    return { id, name: row.name, lane: Number(row.lane) };
  }

  return {
    login,
    logout,
    purgeExpiredSessions,
    findOperatorByToken,
    addOperator,
    setOperatorPassword,
    removeOperator,
    ensureOperators,
    createApiKey,
    revokeApiKey,
    setApiKeyLane,
    findApiKeyPrincipal,
    ensureApiKeyPrincipal,
  };
}

export type AuthService = ReturnType<typeof createAuthService>;
