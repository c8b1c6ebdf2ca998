/**
 * How a variable is read: each reader takes a name and a default, answers the default for an unset or empty
 * variable, and for a bad one adds a sentence naming it to `problems` (and answers the default), so that
 * config.ts lists every bad variable at once.
 */
import fs from 'node:fs';
import path from 'node:path';

export type Env = Record<string, string | undefined>;

/** Parses durations like `12h`, `30m`, `90s`, `2d`, `250ms` or a bare number of seconds. */
export function parseDurationMs(value: string): number | undefined {
  const match = /^(\d+)\s*(ms|[smhd]?)$/.exec(value.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2] || 's';
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit] ?? 1000;
  return amount > 0 ? amount * factor : undefined;
}

export function parseDurationSeconds(value: string): number | undefined {
  const ms = parseDurationMs(value);
  return ms === undefined || ms % 1000 !== 0 ? undefined : ms / 1000;
}

export type EnvReader = ReturnType<typeof createEnvReader>;

export function createEnvReader(env: Env, problems: string[]) {
  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const onOff = (name: string, fallback: boolean): boolean => {
    const raw = env[name]?.trim().toLowerCase();
    if (raw === undefined || raw === '') return fallback;
    if (['on', 'true', '1', 'yes'].includes(raw)) return true;
    if (['off', 'false', '0', 'no'].includes(raw)) return false;
    problems.push(`${name} must be on or off, got "${env[name]}"`);
    return fallback;
  };
  const duration = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const seconds = parseDurationSeconds(raw);
    if (seconds === undefined) {
      problems.push(`${name} must be a duration such as 12h, 30m or 3600, got "${raw}"`);
      return fallback;
    }
    return seconds;
  };
  const durationMs = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const ms = parseDurationMs(raw);
    if (ms === undefined) {
      problems.push(`${name} must be a duration such as 30s, 250ms, 24h or 3600, got "${raw}"`);
      return fallback;
    }
    return ms;
  };
  /** A duration within [min, max]; `range` says the bounds as an operator writes them ("10ms to 1h"). */
  const boundedDurationMs = (name: string, fallback: number, min: number, max: number, range: string): number => {
    const ms = durationMs(name, fallback);
    if (ms >= min && ms <= max) return ms;
    problems.push(`${name} must be a duration from ${range}, got "${env[name]}"`);
    return fallback;
  };
  // Alerts: a pending period or cooldown of 0 is meaningful (fire at the first evaluation, no cooldown).
  const durationMsOrZero = (name: string, fallback: number): number =>
    /^0+\s*(ms|[smhd])?$/.test(env[name]?.trim() ?? '') ? 0 : durationMs(name, fallback);
  // A rate as a fraction (0.2) or a percentage (20%), above 0 and at most 1.
  const ratio = (name: string, fallback: number): number => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    const match = /^(\d+(?:\.\d+)?)(%?)$/.exec(raw);
    const value = match ? Number(match[1]) / (match[2] === '%' ? 100 : 1) : NaN;
    if (!(value > 0 && value <= 1)) {
      problems.push(`${name} must be a rate above 0 and at most 1, as a fraction (0.2) or a percentage (20%), got "${raw}"`);
      return fallback;
    }
    return value;
  };
  const file = (name: string): string | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const resolved = path.resolve(raw);
    if (!fs.existsSync(resolved)) problems.push(`${name} names a file that does not exist: ${resolved}`);
    return resolved;
  };
  const url = (name: string, protocols: string[]): string | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    try {
      const parsed = new URL(raw);
      if (!protocols.includes(parsed.protocol)) {
        problems.push(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}, got "${parsed.protocol}//..."`);
      }
    } catch {
      problems.push(`${name} is not a valid URL`);
    }
    return raw;
  };
  /** A comma-separated list of delays (`0,5s,5m,30m`); the first is normally 0 (at once). */
  const retrySchedule = (name: string, fallback: readonly number[]): number[] => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return [...fallback];
    const steps = raw.split(',').map((part) => part.trim());
    const delays = steps.map((step) => (/^0+(ms|s)?$/.test(step) ? 0 : parseDurationMs(step)));
    if (delays.some((delay) => delay === undefined) || delays.length > 50) {
      problems.push(`${name} must be a comma-separated list of up to 50 durations such as 0,5s,5m,30m,2h, got "${raw}"`);
      return [...fallback];
    }
    return delays as number[];
  };
  /** A port, or 0 for "off" (PORT=off is null instead: see service-settings.ts). */
  const port = (name: string, fallback: number): number =>
    env[name]?.trim().toLowerCase() === 'off' ? 0 : integer(name, fallback, 0, 65535);

  return {
    env,
    problems,
    integer,
    onOff,
    duration,
    durationMs,
    boundedDurationMs,
    durationMsOrZero,
    ratio,
    file,
    url,
    retrySchedule,
    port,
  };
}
