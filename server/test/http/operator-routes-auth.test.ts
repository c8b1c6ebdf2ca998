/**
 * Every route the app registers, read from Fastify itself (so a new route is walked without anyone adding it
 * here), answers 401 to a request without a token before it reads the body or checks the query: over a real
 * socket, with a body that is malformed JSON and never finished. Only the public routes below are left out.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { makeTempDir, openTestStore, testEngine } from '../support/context.js';

/** Routes anyone may call without a token, by URL as Fastify prints it (a prefix covers what lies under it). */
const PUBLIC_ROUTES: Record<string, string> = {
  '/healthz': "a load balancer's probe",
  '/metrics': 'Prometheus scrapes it; METRICS_TOKEN, when set, is its own Bearer token (docs/operations.md)',
  '/api/v1/login': 'how an operator gets a token',
  '/api/openapi.json': 'the API description, public like the docs',
  '/api/docs': 'the API docs pages',
  '/*': "the console's static files (index.html at /): the login view loads without a token",
};

const isPublic = (url: string, entry: string) => url === entry || url.startsWith(`${entry}/`);

/** `{method, url}` for every route of the app, from `printRoutes`' tree (each line a path segment and its methods). */
function registeredRoutes(app: FastifyInstance): { method: string; url: string }[] {
  const routes: { method: string; url: string }[] = [];
  const segments: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    if (line.trim() === '') continue;
    const match = /^((?:│ {3}| {4})*)[├└]── (.*) \(([A-Z, -]+)\)$/.exec(line);
    if (!match) throw new Error(`printRoutes wrote a line this test cannot read: ${JSON.stringify(line)}`);
    segments.length = match[1]!.length / 4;
    segments.push(match[2]!);
    const url = `/${segments.join('')}`.replace(/\/\/+/g, '/');
    for (const method of match[3]!.split(', ')) if (method !== '-') routes.push({ method, url });
  }
  return routes;
}

/** The route's URL with its parameters filled in, and a query no route accepts (a 400 had the query been checked first). */
const concrete = (url: string) => `${url.replace(/:[A-Za-z]+/g, '1').replace(/\*/g, 'anything')}?unexpected=1`;

describe(`every operator route refuses a request without a token before reading it (${testEngine})`, () => {
  let app: FastifyInstance;
  let port: number;
  let dispose: () => Promise<void>;

  beforeAll(async () => {
    const dataDir = makeTempDir();
    const consoleDir = path.join(dataDir, 'console');
    fs.mkdirSync(consoleDir);
    fs.writeFileSync(path.join(consoleDir, 'index.html'), '<!doctype html><title>x</title>');
    const opened = await openTestStore(dataDir);
    dispose = opened.dispose;
    ({ app } = await buildApp({ store: opened.store, consoleDir }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await app.close();
    await dispose();
  });

  /**
   * The status of the answer, or why none came within the deadline. A body-taking method sends malformed JSON and
   * announces more than it sends: a route that reads the body before it authenticates never answers.
   */
  const answerWithoutToken = (method: string, url: string) =>
    new Promise<string>((resolve) => {
      const takesBody = !['GET', 'HEAD'].includes(method);
      const headers = takesBody ? { 'content-type': 'application/json', 'content-length': '1000' } : {};
      const request = http.request({ host: '127.0.0.1', port, method, path: concrete(url), headers, agent: false }, (response) => {
        clearTimeout(deadline);
        resolve(String(response.statusCode));
        response.resume();
        request.destroy();
      });
      const deadline = setTimeout(() => {
        resolve('no answer in 5 s: the body was awaited before the token was checked');
        request.destroy();
      }, 5000);
      request.on('error', () => {});
      if (takesBody) request.write('{"malformed": ');
      else request.end();
    });

  it('answers 401 on every route but the named public ones, for every method, before the body or the query', async () => {
    const routes = registeredRoutes(app);
    // The tree was read: the walk covers the API, not an empty list.
    expect(routes).toContainEqual({ method: 'POST', url: '/api/v1/webhooks' });
    expect(routes).toContainEqual({ method: 'DELETE', url: '/api/v1/suppressions/:address' });
    expect(routes).toContainEqual({ method: 'GET', url: '/api/v1/bounces/:id/raw' });
    for (const entry of Object.keys(PUBLIC_ROUTES))
      expect(
        routes.some((r) => isPublic(r.url, entry)),
        `public route ${entry} is no longer registered`,
      ).toBe(true);

    const guarded = routes.filter((r) => r.method !== 'HEAD' && !Object.keys(PUBLIC_ROUTES).some((entry) => isPublic(r.url, entry)));
    expect(guarded.length).toBeGreaterThan(30);
    const answers = await Promise.all(guarded.map(async (r) => `${r.method} ${r.url}: ${await answerWithoutToken(r.method, r.url)}`));
    expect(answers).toEqual(guarded.map((r) => `${r.method} ${r.url}: 401`));
  });
});
