/**
 * The interactive API reference at /api/docs: the page and every asset it loads answer, it needs nothing
 * the console's CSP forbids (no inline script, no other origin), and it shows the same document as
 * /api/openapi.json.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestContext, type TestContext } from '../support/context.js';

describe('API reference at /api/docs', () => {
  // One store and app for the file: every test only reads the reference.
  let context: TestContext;
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());

  const get = (url: string) => context.app.inject({ method: 'GET', url });

  it('serves the page and every script, style and icon it names, all from this origin', async () => {
    const page = await get('/api/docs');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);

    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(assets).toEqual(
      expect.arrayContaining([
        '/api/docs/static/swagger-ui.css',
        '/api/docs/static/swagger-ui-bundle.js',
        '/api/docs/static/swagger-initializer.js',
      ]),
    );
    for (const asset of assets) {
      expect(asset, 'an asset of this origin').toMatch(/^\/api\/docs\/static\//);
      const response = await get(asset);
      expect(response.statusCode, asset).toBe(200);
      expect(response.headers['content-type'], asset).toMatch(/javascript|css|image\//);
    }
    // The start-up code is a file, not inline: `script-src 'self'` lets it run.
    const initializer = await get('/api/docs/static/swagger-initializer.js');
    expect(initializer.body).toContain("resolveUrl('./json')");
  });

  it("runs under the console's CSP unchanged: no inline script or style on the page", async () => {
    const page = await get('/api/docs');
    const consolePolicy = (await get('/healthz')).headers['content-security-policy'];
    expect(page.headers['content-security-policy']).toBe(consolePolicy);
    expect(consolePolicy).toContain("script-src 'self'");
    expect(consolePolicy).not.toContain('unsafe-inline');
    for (const [, body] of page.body.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)) expect(body!.trim()).toBe('');
    expect(page.body).not.toMatch(/<style\b|\sstyle="/);
    expect(page.body).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    // The validator badge would load an image from validator.swagger.io; the top bar's logo carries a
    // <style> element.
    const initializer = (await get('/api/docs/static/swagger-initializer.js')).body;
    expect(initializer).toContain('validatorUrl: null');
    expect(initializer).toMatch(/"layout":\s*"BaseLayout"/);
  });

  it('shows the same OpenAPI document as /api/openapi.json, listing every route and hiding its own', async () => {
    const shown = await get('/api/docs/json');
    expect(shown.statusCode).toBe(200);
    const served = (await get('/api/openapi.json')).json();
    expect(shown.json()).toEqual(served);
    const paths = Object.keys(served.paths);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/api/v1/login',
        '/api/v1/logout',
        '/api/v1/mail/list',
        '/api/v1/mail/{id}',
        '/api/v1/mail/{id}/raw',
        '/api/v1/mail/{id}/remote-image',
        '/api/v1/mail/{id}/dequeue',
        '/api/v1/mail/{id}/requeue',
        '/api/v1/mail',
        '/healthz',
        '/metrics',
      ]),
    );
    expect(paths.filter((path) => path.startsWith('/api/docs') || path === '/api/openapi.json')).toEqual([]);
    expect(served.paths['/api/v1/mail/list'].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['status', 'q', 'sort', 'order', 'limit', 'cursor']),
    );
  });
});
