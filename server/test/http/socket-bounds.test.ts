/**
 * Sockets a client holds without reading or without finishing, against a real listening app on
 * the engine under test: event streams dropped with their sockets on overflow, eviction, revocation and a stalled
 * write, and counted until those sockets close; simultaneous connects held to the limit; operator and API-key
 * routes answering 401 before a body is read; the request, headers and idle timeouts and the connection cap.
 */
import fs from 'node:fs';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type AppOptions, type AppServices } from '../../src/app.js';
import { ConfigError, HTTP_LIMIT_DEFAULTS, loadConfig } from '../../src/config.js';
import type { Store } from '../../src/store/connection.js';
import { auth, makeTempDir, openTestStore, PASSWORD } from '../support/context.js';
import { waitUntil } from '../support/net.js';
import { openEvents } from '../support/sse.js';

interface Server {
  app: FastifyInstance;
  services: AppServices;
  store: Store;
  port: number;
  token: string;
  close(): Promise<void>;
}

/** The app as main.ts builds it (its server options included), listening on a loopback port. */
async function startServer(options: Pick<AppOptions, 'live' | 'http'> = {}): Promise<Server> {
  const dataDir = makeTempDir();
  const { store, dispose } = await openTestStore(dataDir);
  const { app, services } = await buildApp({ store, passwordCost: 2 ** 14, ...options });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await services.auth.addOperator('ops', PASSWORD);
  const login = await app.inject({ method: 'POST', url: '/api/v1/login', payload: { username: 'ops', password: PASSWORD } });
  const token = (login.json() as { data: Array<{ token: string }> }).data[0]!.token;
  return {
    app,
    services,
    store,
    port,
    token,
    async close() {
      await app.close();
      await dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const sockets = new Set<net.Socket>();
afterEach(() => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
});

interface RawClient {
  socket: net.Socket;
  /** Everything received (only while reading). */
  received(): string;
  closed: Promise<void>;
  readonly isClosed: boolean;
}

/** A raw HTTP client on its own socket; `read: false` never reads a byte of the answer. */
async function rawClient(port: number, request: string, { read = true } = {}): Promise<RawClient> {
  const socket = net.connect(port, '127.0.0.1');
  sockets.add(socket);
  let text = '';
  let isClosed = false;
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      isClosed = true;
      resolve();
    }),
  );
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  if (read) socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  else socket.pause();
  if (request) socket.write(request);
  return {
    socket,
    received: () => text,
    closed,
    get isClosed() {
      return isClosed;
    },
  };
}

const eventsRequest = (token: string) => `GET /api/v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${token}\r\n\r\n`;

function connectionsOf(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

/** The hub reads these ids' rows at its next flush and sends each stream ~100 bytes per id (deleted mails). */
function publishChanges(server: Server, first: number, count: number): void {
  server.store.changes.publish({ type: 'updated', ids: Array.from({ length: count }, (_, i) => first + i) });
}

/** Keeps the hub busy with 1,000-id batches until `done` answers true. */
async function pushUntil(server: Server, done: () => Promise<boolean> | boolean, what: string): Promise<void> {
  let next = 1_000_000;
  await waitUntil(
    async () => {
      publishChanges(server, next, 1000);
      next += 1000;
      return done();
    },
    { timeoutMs: 20_000, intervalMs: 20, what },
  );
}

describe('event streams', () => {
  let server: Server;
  afterEach(async () => {
    await server.close();
  });

  it('drop a reader that lets its backlog pass the bound: its socket is closed, and it counts until then', async () => {
    server = await startServer({ live: { flushMs: 20, maxBufferedBytes: 64 * 1024 } });
    const reader = await openEvents(`http://127.0.0.1:${server.port}`, server.token);
    const stuck = await rawClient(server.port, eventsRequest(server.token), { read: false });
    await waitUntil(() => server.services.live.streamCount === 2, { what: 'both streams to open' });
    // Before: the stream was ended gracefully and forgotten at once, but its socket stayed open behind a
    // response that could never finish, and it no longer counted against the limits.
    await pushUntil(server, async () => (await connectionsOf(server)) === 1, 'the server to close the non-reading socket');
    await waitUntil(() => server.services.live.streamCount === 1, { what: 'the closed stream to be forgotten' });
    expect(reader.isEnded).toBe(false);
    // The client, reading at last, finds the connection reset.
    stuck.socket.resume();
    await stuck.closed;
    reader.close();
  });

  it('drop a stream whose socket takes no bytes for writeStallMs, and keep one that reads', async () => {
    server = await startServer({ live: { flushMs: 20, writeStallMs: 600, maxBufferedBytes: 512 * 1024 * 1024 } });
    const reader = await openEvents(`http://127.0.0.1:${server.port}`, server.token);
    await rawClient(server.port, eventsRequest(server.token), { read: false });
    await waitUntil(() => server.services.live.streamCount === 2, { what: 'both streams to open' });
    // The backlog bound is far away: only the stall timer can drop it.
    await pushUntil(server, async () => (await connectionsOf(server)) === 1, 'the stalled stream to be dropped');
    await waitUntil(() => server.services.live.streamCount === 1, { what: 'the closed stream to be forgotten' });
    expect(reader.isEnded).toBe(false);
    reader.close();
  });

  it('close the socket of the oldest stream past the per-token limit, and of every stream of a revoked token', async () => {
    server = await startServer({ live: { maxStreamsPerToken: 2 } });
    const first = await rawClient(server.port, eventsRequest(server.token), { read: false });
    await rawClient(server.port, eventsRequest(server.token), { read: false });
    await waitUntil(() => server.services.live.streamCount === 2, { what: 'two streams' });
    await rawClient(server.port, eventsRequest(server.token), { read: false });
    // Before: the oldest was ended gracefully; its connection stayed open (kept alive) and held a socket.
    await waitUntil(() => first.isClosed || connectionsOf(server).then((n) => n === 2), { what: 'the evicted socket to close' });
    expect(server.services.live.streamCount).toBe(2);

    const logout = await server.app.inject({ method: 'POST', url: '/api/v1/logout', headers: auth(server.token) });
    expect(logout.statusCode).toBe(200);
    await waitUntil(async () => (await connectionsOf(server)) === 0 && server.services.live.streamCount === 0, {
      what: 'the revoked streams to close their sockets',
    });
  });

  it('hold simultaneous connects to the process limit: the places are taken before the first await', async () => {
    server = await startServer({ live: { maxStreams: 5, maxStreamsPerToken: 100 } });
    const clients = await Promise.all(Array.from({ length: 30 }, () => rawClient(server.port, eventsRequest(server.token))));
    await waitUntil(() => clients.every((c) => c.received().includes('\r\n\r\n')), { what: 'every connect to be answered' });
    const statuses = clients.map((c) => Number(c.received().slice(9, 12)));
    // Before: all 30 passed the room check while the first was still reading the counters.
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 503)).toHaveLength(25);
    expect(server.services.live.streamCount).toBe(5);
    for (const client of clients) client.socket.destroy();
    await waitUntil(() => server.services.live.streamCount === 0, { what: 'the streams to be forgotten' });
  });
});

describe('requests that never finish', () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer({ http: { headersTimeoutMs: 400, requestTimeoutMs: 800, connectionTimeoutMs: 20_000 } });
  });
  afterAll(async () => {
    await server.close();
  });

  it.each([
    ['an operator route without a token', 'POST /api/v1/mail/bulk', ''],
    ['an operator route with an unknown token', 'POST /api/v1/mail/bulk', 'Authorization: Token nope\r\n'],
    ['the submission route without a key', 'POST /api/v1/mail', ''],
  ])('%s answers 401 before the body is read, and closes the connection', async (_name, line, authorization) => {
    const client = await rawClient(
      server.port,
      `${line} HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{`,
    );
    // Before: the route authenticated after the whole body had arrived, so a client sending it a byte at a
    // time held the socket for as long as it liked.
    await waitUntil(() => client.received().includes('\r\n\r\n'), { timeoutMs: 5_000, what: 'an answer before the body is complete' });
    expect(client.received()).toMatch(/^HTTP\/1\.1 401 /);
    expect(client.received().toLowerCase()).toContain('connection: close');
    await client.closed;
  });

  it('answers 408 to an authenticated request whose body does not arrive in time, and closes it', async () => {
    const client = await rawClient(
      server.port,
      `POST /api/v1/mail/bulk HTTP/1.1\r\nHost: x\r\nAuthorization: Token ${server.token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`,
    );
    const trickle = setInterval(() => client.socket.write(' '), 100);
    try {
      await client.closed;
    } finally {
      clearInterval(trickle);
    }
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(client.received()).toContain('"code":"request_timeout"');
  });

  it('closes a connection that sends nothing, and one whose headers never end', async () => {
    const silent = await rawClient(server.port, '');
    const partial = await rawClient(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
    await Promise.all([silent.closed, partial.closed]);
  });
});

describe('the connection cap', () => {
  it('closes connections past it at once, and serves again when they are gone', async () => {
    // The default timeouts: only the cap can close these silent connections within the test.
    const server = await startServer({ http: { maxConnections: 40 } });
    try {
      const held = await Promise.all(Array.from({ length: 60 }, () => rawClient(server.port, '')));
      await waitUntil(() => held.filter((c) => c.isClosed).length >= 20, {
        timeoutMs: 5_000,
        what: 'the connections past the cap to close',
      });
      expect(held.filter((c) => c.isClosed)).toHaveLength(20);
      expect(await connectionsOf(server)).toBe(40);
      for (const client of held) client.socket.destroy();
      await waitUntil(async () => (await connectionsOf(server)) === 0, { what: 'the held connections to go' });
      const answer = await fetch(`http://127.0.0.1:${server.port}/healthz`);
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    } finally {
      await server.close();
    }
  });
});

describe('a handler that works longer than the idle timeout', () => {
  it('keeps the connection: only a silent client is closed, not one waiting for its answer', async () => {
    const dataDir = makeTempDir();
    const { store, dispose } = await openTestStore(dataDir);
    const { app } = await buildApp({ store, passwordCost: 2 ** 14, http: { connectionTimeoutMs: 300 } });
    app.get('/slow', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      return { done: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const client = await rawClient(port, 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitUntil(() => client.received().includes('{"done":true}') || client.isClosed, { what: 'the slow answer' });
      // Before: the socket, silent for 300 ms while the handler worked, was destroyed without an answer.
      expect(client.received()).toContain('{"done":true}');
      client.socket.destroy();
    } finally {
      await app.close();
      await dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('HTTP_* configuration', () => {
  const base = () => ({ DATA_DIR: makeTempDir('outbox-config-') });

  it('has bounded defaults and reads durations and the cap', () => {
    const defaults = loadConfig(base()).http;
    expect(defaults).toEqual(HTTP_LIMIT_DEFAULTS);
    expect(defaults).toMatchObject({ headersTimeoutMs: 20_000, requestTimeoutMs: 60_000, connectionTimeoutMs: 120_000 });
    expect(defaults.maxConnections).toBeGreaterThan(0);
    expect(
      loadConfig({
        ...base(),
        HTTP_HEADERS_TIMEOUT: '5s',
        HTTP_REQUEST_TIMEOUT: '2m',
        HTTP_CONNECTION_TIMEOUT: '300',
        HTTP_MAX_CONNECTIONS: '500',
      }).http,
    ).toEqual({ headersTimeoutMs: 5_000, requestTimeoutMs: 120_000, connectionTimeoutMs: 300_000, maxConnections: 500 });
  });

  it('refuses bad values, naming each variable', () => {
    let error: unknown;
    try {
      loadConfig({
        ...base(),
        HTTP_HEADERS_TIMEOUT: 'soon',
        HTTP_REQUEST_TIMEOUT: '0',
        HTTP_CONNECTION_TIMEOUT: '5s',
        HTTP_MAX_CONNECTIONS: '0',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const name of [
      'HTTP_HEADERS_TIMEOUT',
      'HTTP_REQUEST_TIMEOUT',
      'HTTP_CONNECTION_TIMEOUT must be at least 20s',
      'HTTP_MAX_CONNECTIONS',
    ]) {
      expect(problems).toContain(name);
    }
    expect(() => loadConfig({ ...base(), HTTP_HEADERS_TIMEOUT: '30s', HTTP_REQUEST_TIMEOUT: '10s' })).toThrow(
      /HTTP_REQUEST_TIMEOUT must be at least HTTP_HEADERS_TIMEOUT/,
    );
  });
});
