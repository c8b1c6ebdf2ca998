/**
 * Tells whoever shares the store that mails changed (ARCHITECTURE.md#the-path-of-a-mail): a new mail wakes a free worker at once,
 * and live views refresh. Within one process a change is handed to the listeners directly. On PostgreSQL it
 * also goes to every other instance through LISTEN/NOTIFY, so an API-only instance's submission starts
 * delivery within milliseconds on whichever worker instance is free. SQLite has one server per data
 * folder; a mail the CLI adds beside it is found by the worker's poll within a second.
 */
import crypto from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import type { Db, Engine } from './connection.js';

export interface StoreChange {
  type: string;
  ids: number[];
  /** Set on a change heard from another instance whose id list was cut to fit a NOTIFY: more ids changed. */
  truncated?: boolean;
}

export type ChangeListener = (change: StoreChange) => void;

export interface ChangeFeed {
  /** Hands the change to this process's listeners now and, on PostgreSQL, to every other instance. */
  publish(change: StoreChange): void;
  subscribe(listener: ChangeListener): () => void;
  close(): Promise<void>;
}

export const CHANGE_CHANNEL = 'outbox_mail_changes';
/** NOTIFY payloads must stay under 8000 bytes; listeners take a long list as "these and maybe more". */
const MAX_IDS_PER_NOTIFY = 200;

export function createChangeFeed(options: {
  engine: Engine;
  db: Db;
  databaseUrl?: string | undefined;
  onError?: (error: Error) => void;
}): ChangeFeed {
  const listeners = new Set<ChangeListener>();
  const origin = crypto.randomBytes(6).toString('hex');
  let client: pg.Client | undefined;
  let connecting: Promise<void> | undefined;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let closed = false;

  const dispatch = (change: StoreChange) => {
    for (const listener of listeners) listener(change);
  };

  function listen(): void {
    if (options.engine !== 'postgres' || !options.databaseUrl || closed || connecting) return;
    const listener = new pg.Client({ connectionString: options.databaseUrl });
    const retry = (error: Error) => {
      options.onError?.(error);
      client = undefined;
      connecting = undefined;
      listener.removeAllListeners();
      listener.on('error', () => undefined);
      void listener.end().catch(() => undefined);
      if (!closed) reconnectTimer = setTimeout(listen, 1000);
      reconnectTimer?.unref();
    };
    listener.on('error', retry);
    listener.on('notification', (message) => {
      if (!message.payload) return;
      try {
        const { o, type, ids, m } = JSON.parse(message.payload) as { o: string; type: string; ids: number[]; m?: 1 };
        if (o !== origin) dispatch(m ? { type, ids, truncated: true } : { type, ids });
      } catch {
        // Not ours: ignore.
      }
    });
    connecting = listener
      .connect()
      .then(() => listener.query(`LISTEN ${CHANGE_CHANNEL}`))
      .then(() => {
        client = listener;
        // A change while we were (re)connecting was missed: tell the listeners something may have changed.
        dispatch({ type: 'resync', ids: [] });
      })
      .catch(retry);
  }

  return {
    publish(change) {
      dispatch(change);
      if (options.engine !== 'postgres') return;
      const cut = change.ids.length > MAX_IDS_PER_NOTIFY;
      const payload = JSON.stringify({
        o: origin,
        type: change.type,
        ids: change.ids.slice(0, MAX_IDS_PER_NOTIFY),
        ...(cut ? { m: 1 } : {}),
      });
      sql`select pg_notify(${CHANGE_CHANNEL}, ${payload})`.execute(options.db).catch((error: unknown) => options.onError?.(error as Error));
    },
    subscribe(listener) {
      listeners.add(listener);
      listen();
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      await connecting?.catch(() => undefined);
      const current = client;
      client = undefined;
      if (current) await current.end().catch(() => undefined);
    },
  };
}
