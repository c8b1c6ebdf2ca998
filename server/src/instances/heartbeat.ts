/**
 * This process's heartbeat (docs/operations.md#instances-and-heartbeats): a row in `instances`
 * written at start and every `intervalMs` (HEARTBEAT_INTERVAL, 5 s), deleted at a graceful stop. Other
 * processes judge it stale `staleAfterMs` (INSTANCE_STALE_AFTER, 15 s) after its last write and delete it an
 * hour after. A write that fails (the store is away) is logged and tried again at the next tick: the heartbeat
 * never stops the process, and a silent row is exactly what "stale" means to everyone else.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import type { InstanceRole } from '@outbox/contract';
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/connection.js';
import * as repo from './instance.repository.js';

export const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000;
export const DEFAULT_STALE_AFTER_MS = 15_000;
/** A stale row stays this long, so an operator sees which instance went away, then any instance deletes it. */
export const FORGET_AFTER_MS = 3_600_000;
const LOAD_WINDOW_MS = 60_000;

/** A worker's figures at a tick: sends under way, and mails the relay accepted since the process started. */
export interface WorkerLoad {
  inFlight: number;
  deliveredTotal: number;
}

export interface HeartbeatOptions {
  store: Store;
  clock: Clock;
  roles: InstanceRole[];
  version: string;
  intervalMs?: number;
  staleAfterMs?: number;
  forgetAfterMs?: number;
  /** Present on a worker: read at every tick. */
  workerLoad?: () => WorkerLoad;
  /** The instance's id (newInstanceId); a new one by default. A worker holds its leases under the same id. */
  id?: string;
  logger?: Pick<Logger, 'info' | 'warn'>;
  /**
   * Called after each beat written: a worker's relay health is written then (relays/relay-health-publisher.ts), its rows
   * referencing this row, so never before the first one.
   */
  afterBeat?: () => void;
}

/**
 * Mails delivered in the last minute from samples of an ever-growing total, one per tick: the total now minus
 * the total a minute ago, interpolated between the two samples around that instant (the counter is read
 * every 5 s, the minute's edge falls between two reads). Before the process is a minute old it counts from 0.
 */
export function createDeliveryWindow(startedAt: number, windowMs = LOAD_WINDOW_MS) {
  const samples: Array<{ at: number; total: number }> = [{ at: startedAt, total: 0 }];
  return {
    sample(at: number, total: number): number {
      samples.push({ at, total });
      const edge = at - windowMs;
      // Keep one sample at or before the edge (the base), drop the older ones.
      while (samples.length > 2 && samples[1]!.at <= edge) samples.shift();
      const [before, after] = samples as [{ at: number; total: number }, { at: number; total: number }];
      if (before.at >= edge || after.at <= before.at) return total - before.total;
      const share = Math.min(1, Math.max(0, (edge - before.at) / (after.at - before.at)));
      return Math.max(0, Math.round(total - (before.total + (after.total - before.total) * share)));
    },
  };
}

/**
 * A process's id in `instances`. Its worker holds leases under the same id, so the lease sweeper can tell the mails
 * of a process whose heartbeat went stale (delivery/lease-sweeper.ts).
 */
export function newInstanceId(): string {
  return crypto.randomBytes(8).toString('hex');
}

/** The `version` of a package.json, or "unknown" when it has none or cannot be read. */
export function readPackageVersion(file: string): string {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: unknown };
    return typeof parsed.version === 'string' && parsed.version !== '' ? parsed.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export function createHeartbeat(options: HeartbeatOptions) {
  const { store, clock, logger } = options;
  const intervalMs = options.intervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
  const staleAfterMs = options.staleAfterMs ?? DEFAULT_STALE_AFTER_MS;
  const forgetAfterMs = options.forgetAfterMs ?? FORGET_AFTER_MS;
  const id = options.id ?? newInstanceId();
  const startedAt = clock.now();
  const deliveries = createDeliveryWindow(startedAt);
  let timer: NodeJS.Timeout | undefined;
  let isStopped = false;
  let failures = 0;
  /** Beats run one after another: a slow store delays the next one instead of piling writes up. */
  let current: Promise<boolean> = Promise.resolve(true);

  async function write(): Promise<boolean> {
    if (isStopped) return false;
    const now = clock.now();
    const load = options.workerLoad?.();
    try {
      // One commit for both: on SQLite each commit is an fsync that blocks the process.
      await store.db.transaction().execute(async (trx) => {
        await repo.upsertHeartbeat(trx, {
          id,
          host: os.hostname(),
          pid: process.pid,
          version: options.version,
          roles: options.roles.join(','),
          started_at: startedAt,
          last_heartbeat_at: now,
          stale_after_ms: staleAfterMs,
          in_flight: load ? load.inFlight : null,
          delivered_last_minute: load ? deliveries.sample(now, load.deliveredTotal) : null,
        });
        await repo.deleteSilentSince(trx, now - forgetAfterMs);
      });
      if (failures > 0) logger?.info({ instanceId: id, failedBeats: failures }, 'heartbeat written again');
      failures = 0;
      options.afterBeat?.();
      return true;
    } catch (error) {
      failures += 1;
      // The first failure and then one a minute: an outage of an hour is not 720 lines.
      if (failures === 1 || failures % Math.max(1, Math.round(60_000 / intervalMs)) === 0) {
        logger?.warn(
          { err: error, instanceId: id, failedBeats: failures },
          'heartbeat not written (store unavailable?); trying again at the next tick — other instances see this one as stale meanwhile',
        );
      }
      return false;
    }
  }

  function schedule(): void {
    if (isStopped) return;
    timer = setTimeout(() => {
      void beat().finally(schedule);
    }, intervalMs);
    timer.unref();
  }

  /** Writes the row now (after any write under way); true when it was written. Never throws. */
  function beat(): Promise<boolean> {
    current = current.then(write, write);
    return current;
  }

  return {
    id,
    startedAt,
    intervalMs,
    staleAfterMs,
    beat,
    /** The first beat, then one every intervalMs. Resolves once the first beat was tried. */
    async start(): Promise<void> {
      await beat();
      schedule();
    },
    /** Graceful: no more beats, and the row goes at once, so nobody waits 15 s to see this process gone. */
    async stop(): Promise<void> {
      isStopped = true;
      if (timer) clearTimeout(timer);
      await current;
      try {
        await repo.deleteInstance(store.db, id);
      } catch (error) {
        logger?.warn({ err: error, instanceId: id }, 'heartbeat row not deleted at stop; it turns stale and is forgotten in an hour');
      }
    },
  };
}

export type Heartbeat = ReturnType<typeof createHeartbeat>;
