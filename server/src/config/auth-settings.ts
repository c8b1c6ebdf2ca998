/** Operators' settings: the admin created at start, sessions, password hashing. */
import type { EnvReader } from './env-reader.js';

export interface AuthSettings {
  adminUser: string | undefined;
  adminPassword: string | undefined;
  sessionTtlSeconds: number;
  /**
   * argon2id's memory for new operator password hashes, in MiB (PASSWORD_HASH_MEMORY, default 19 with 2 passes:
   * OWASP's minimum, ~30 ms of one core per login). More makes each login dearer for an attacker and for us.
   */
  passwordHashMemoryMiB: number;
}

export function readAuthSettings({ env, problems, duration, integer }: EnvReader): AuthSettings {
  const adminUser = env.OUTBOX_ADMIN_USER || undefined;
  const adminPassword = env.OUTBOX_ADMIN_PASSWORD || undefined;
  if (adminUser && !adminPassword) problems.push('OUTBOX_ADMIN_PASSWORD must be set when OUTBOX_ADMIN_USER is');
  if (adminPassword && !adminUser) problems.push('OUTBOX_ADMIN_USER must be set when OUTBOX_ADMIN_PASSWORD is');
  // Refused rather than ignored, so that nobody believes a setting still applies (passwords are hashed with argon2id now).
  if (env.PASSWORD_HASH_COST !== undefined) {
    problems.push(
      'PASSWORD_HASH_COST is no longer read: passwords are hashed with argon2id; set PASSWORD_HASH_MEMORY (MiB, 19–1024) instead, or remove it',
    );
  }
  return {
    adminUser,
    adminPassword,
    sessionTtlSeconds: duration('SESSION_TTL', 12 * 3600),
    passwordHashMemoryMiB: integer('PASSWORD_HASH_MEMORY', 19, 19, 1024),
  };
}
