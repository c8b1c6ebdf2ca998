/**
 * The image proxy behind the drawer's "Load remote images": GET /api/v1/mail/{id}/remote-image
 * against a real image host on loopback, on both engines. Loopback is refused by default and reached only with
 * IMAGE_PROXY_ALLOW_PRIVATE (`allowPrivate`); a URL must occur in the mail's HTML; only raster images within the
 * size and time bounds pass; a redirect is checked again at every hop.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, createTestContext, loginAs, type TestContext } from '../support/context.js';

/** A 1×1 transparent PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
const MAX_BYTES = 5 * 1024 * 1024;

interface ImageHost {
  url(path: string): string;
  /** Every request the host received: path and headers. */
  requests: Array<{ path: string; headers: http.IncomingHttpHeaders }>;
  close(): Promise<void>;
}

/** A sender's image host: each path answers one way an image host can. */
async function startImageHost(): Promise<ImageHost> {
  const requests: ImageHost['requests'] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((request, response) => {
    const path = request.url ?? '';
    requests.push({ path, headers: request.headers });
    if (path.startsWith('/pixel.png')) {
      response.writeHead(200, { 'content-type': 'image/png; charset=binary', 'content-length': PNG.length }).end(PNG);
    } else if (path === '/page.html') {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>not an image</h1>');
    } else if (path === '/vector.svg') {
      response.writeHead(200, { 'content-type': 'image/svg+xml' }).end('<svg xmlns="http://www.w3.org/2000/svg"/>');
    } else if (path === '/declared-huge.png') {
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': MAX_BYTES + 1 }).end(Buffer.alloc(MAX_BYTES + 1));
    } else if (path === '/streamed-huge.png') {
      // No Content-Length: the proxy finds out only by counting.
      response.writeHead(200, { 'content-type': 'image/png' });
      response.end(Buffer.alloc(MAX_BYTES + 1));
    } else if (path === '/moved.png') {
      response.writeHead(302, { location: '/pixel.png?moved' }).end();
    } else if (path === '/to-metadata.png') {
      response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    } else if (path === '/to-credentials.png') {
      // The same host, with a login in the URL: following it would send Authorization on the mail's behalf.
      response.writeHead(302, { location: `http://user:secret@${request.headers.host}/pixel.png?with-credentials` }).end();
    } else if (path === '/loop.png') {
      response.writeHead(302, { location: '/loop.png' }).end();
    } else if (path === '/gone.png') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('gone');
    } else if (path === '/silent.png') {
      // Never answers: only the proxy's deadline ends it.
    } else {
      response.writeHead(500).end();
    }
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    requests,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let host: ImageHost;
/** The defaults: private targets refused. */
let refusing: TestContext;
/**
 * IMAGE_PROXY_ALLOW_PRIVATE=true, and a deadline short enough for the silent host but long enough for 5 MB to
 * stream over loopback on a loaded machine (at 1 s, the streamed-huge case once timed out beside the browser suite).
 */
let allowing: TestContext;
/** Loopback allowed, every other private range refused: a redirect from the host to a refused address. */
let loopbackOnly: TestContext;

beforeAll(async () => {
  host = await startImageHost();
  [refusing, allowing, loopbackOnly] = await Promise.all([
    createTestContext(),
    createTestContext({ remoteImages: { allowPrivate: true, timeoutMs: 5_000 } }),
    createTestContext({ remoteImages: { isAddressAllowed: (ip) => ip === '127.0.0.1' } }),
  ]);
});

afterAll(async () => {
  await Promise.all([refusing?.close(), allowing?.close(), loopbackOnly?.close()]);
  await host?.close();
});

/** Submits a mail whose HTML body is `html` through the API; answers its id. */
async function submitHtml(context: TestContext, html: string): Promise<number> {
  const apiKey = await context.services.auth.createApiKey(`images-${Math.random().toString(36).slice(2)}`);
  const response = await context.app.inject({
    method: 'POST',
    url: '/api/v1/mail',
    headers: auth(apiKey),
    payload: { fromMail: 'news@example.com', to: [{ recipientMail: 'ann@example.com' }], subject: 'Images', html },
  });
  expect(response.statusCode).toBe(202);
  return (response.json() as { data: Array<{ id: number }> }).data[0]!.id;
}

function proxy(context: TestContext, token: string, id: number, url: string) {
  return context.app.inject({
    method: 'GET',
    url: `/api/v1/mail/${id}/remote-image`,
    query: { url },
    headers: { authorization: `Token ${token}` },
  });
}

const errorOf = (response: { json(): unknown }) => (response.json() as { error: { code: string; message: string } }).error;

describe('the image proxy', () => {
  it('refuses a loopback image host by default, naming the setting; the host sees no request', async () => {
    const token = await loginAs(refusing);
    const url = host.url('/pixel.png?refused');
    const id = await submitHtml(refusing, `<img src="${url}">`);
    const response = await proxy(refusing, token, id, url);
    expect(response.statusCode).toBe(403);
    expect(errorOf(response)).toEqual({
      code: 'image_address_refused',
      message: expect.stringContaining('IMAGE_PROXY_ALLOW_PRIVATE=true'),
    });
    expect(host.requests.some((request) => request.path === '/pixel.png?refused')).toBe(false);
    // A name that resolves to loopback is refused at connect time, by the guarded lookup.
    const byName = `http://localhost:${new URL(url).port}/pixel.png?by-name`;
    const named = await submitHtml(refusing, `<img src="${byName}">`);
    const answer = await proxy(refusing, token, named, byName);
    expect(answer.statusCode).toBe(403);
    expect(errorOf(answer).message).toMatch(/localhost resolves to .* not a public address/);
  });

  it('with IMAGE_PROXY_ALLOW_PRIVATE, serves the image sandboxed, unsniffed and privately cached; the host sees no credentials', async () => {
    const token = await loginAs(allowing);
    const url = host.url('/pixel.png?allowed');
    const id = await submitHtml(allowing, `<p>Hi</p><img alt="logo" src="${url}">`);
    const response = await proxy(allowing, token, id, url);
    expect(response.statusCode).toBe(200);
    expect(response.rawPayload.equals(PNG)).toBe(true);
    expect(response.headers['content-type']).toBe('image/png');
    expect(response.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['cache-control']).toBe('private, max-age=600');
    const seen = host.requests.find((request) => request.path === '/pixel.png?allowed')!;
    expect(seen.headers['user-agent']).toBe('Outbox-ImageProxy/1');
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers.cookie).toBeUndefined();
    // Other answers keep no-store.
    const detail = await allowing.app.inject({ method: 'GET', url: `/api/v1/mail/${id}`, headers: auth(token) });
    expect(detail.headers['cache-control']).toBe('no-store');
  });

  it('fetches only URLs the mail names as they are written there: srcset, style url(), character references', async () => {
    const token = await loginAs(allowing);
    const inSrcset = host.url('/pixel.png?set=1');
    const inStyle = host.url('/pixel.png?style=1');
    const withAmpersand = host.url('/pixel.png?a=1&b=2');
    const id = await submitHtml(
      allowing,
      `<img srcset="${inSrcset} 2x, ${host.url('/pixel.png?set=2')} 1x"><td style="background:url('${inStyle}')"></td>` +
        `<img src="${withAmpersand.replace('&', '&amp;')}">`,
    );
    for (const url of [inSrcset, inStyle, withAmpersand]) expect((await proxy(allowing, token, id, url)).statusCode).toBe(200);

    // Not in this mail: 404, and the host is not asked.
    const before = host.requests.length;
    for (const url of [host.url('/pixel.png?elsewhere'), host.url('/pixel.png?set'), host.url('/pixel.png?a=1')]) {
      const response = await proxy(allowing, token, id, url);
      expect(response.statusCode).toBe(404);
      expect(errorOf(response)).toEqual({ code: 'image_not_in_mail', message: expect.stringContaining('query.url') });
    }
    expect(host.requests.length).toBe(before);
    const other = await submitHtml(allowing, `<img src="${host.url('/pixel.png?other-mail')}">`);
    expect((await proxy(allowing, token, id, host.url('/pixel.png?other-mail'))).statusCode).toBe(404);
    expect((await proxy(allowing, token, other, host.url('/pixel.png?other-mail'))).statusCode).toBe(200);
    expect(errorOf(await proxy(allowing, token, 999_999, inSrcset)).code).toBe('mail_not_found');
  });

  it('refuses what is not a raster image, too large, redirected too often, failing or silent, each with its code', async () => {
    const token = await loginAs(allowing);
    const cases = [
      ['/page.html', 502, 'image_not_an_image', /text\/html/],
      ['/vector.svg', 502, 'image_not_an_image', /image\/svg\+xml/],
      ['/declared-huge.png', 502, 'image_too_large', /5242881 bytes/],
      ['/streamed-huge.png', 502, 'image_too_large', /more than the 5242880 bytes/],
      ['/loop.png', 502, 'image_too_many_redirects', /more than 3 times/],
      ['/gone.png', 502, 'image_upstream_status', /answered 404/],
      ['/silent.png', 504, 'image_timeout', /within 5000 ms/],
    ] as const;
    const id = await submitHtml(allowing, cases.map(([path]) => `<img src="${host.url(path)}">`).join(''));
    for (const [path, status, code, message] of cases) {
      const response = await proxy(allowing, token, id, host.url(path));
      expect({ path, status: response.statusCode }).toEqual({ path, status });
      expect(errorOf(response).code).toBe(code);
      expect(errorOf(response).message).toMatch(message);
    }
    // A redirect within what is allowed is followed.
    const moved = await submitHtml(allowing, `<img src="${host.url('/moved.png')}">`);
    const response = await proxy(allowing, token, moved, host.url('/moved.png'));
    expect(response.statusCode).toBe(200);
    expect(host.requests.some((request) => request.path === '/pixel.png?moved')).toBe(true);
  });

  it('checks every redirect again: an allowed host redirecting to a link-local address is refused', async () => {
    const token = await loginAs(loopbackOnly);
    const url = host.url('/to-metadata.png');
    const id = await submitHtml(loopbackOnly, `<img src="${url}">`);
    const response = await proxy(loopbackOnly, token, id, url);
    expect(response.statusCode).toBe(403);
    expect(errorOf(response)).toEqual({ code: 'image_address_refused', message: expect.stringContaining('169.254.169.254') });
    expect(host.requests.some((request) => request.path === '/to-metadata.png')).toBe(true);
  });

  it('refuses a redirect whose Location carries a user name or password, without following it', async () => {
    const token = await loginAs(allowing);
    const url = host.url('/to-credentials.png');
    const id = await submitHtml(allowing, `<img src="${url}">`);
    const response = await proxy(allowing, token, id, url);
    expect(response.statusCode).toBe(502);
    expect(errorOf(response)).toEqual({ code: 'image_bad_redirect', message: expect.stringContaining('user name or password') });
    expect(host.requests.some((request) => request.path === '/to-credentials.png')).toBe(true);
    expect(host.requests.some((request) => request.path === '/pixel.png?with-credentials')).toBe(false);
  });

  it('is for operators only, and names the field of a bad URL', async () => {
    const token = await loginAs(allowing);
    const url = host.url('/pixel.png?auth');
    const id = await submitHtml(allowing, `<img src="${url}"><img src="ftp://example.com/a.png">`);
    const anonymous = await allowing.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/remote-image`, query: { url } });
    expect(anonymous.statusCode).toBe(401);
    const apiKey = await allowing.services.auth.createApiKey('images-app');
    expect((await proxy(allowing, apiKey, id, url)).statusCode).toBe(403);
    for (const bad of ['ftp://example.com/a.png', 'not a url', 'http://user:secret@127.0.0.1/a.png']) {
      const response = await proxy(allowing, token, id, bad);
      expect(response.statusCode).toBe(400);
      expect(errorOf(response)).toEqual({ code: 'invalid_url', message: expect.stringContaining('query.url') });
    }
    const missing = await allowing.app.inject({ method: 'GET', url: `/api/v1/mail/${id}/remote-image`, headers: auth(token) });
    expect(missing.statusCode).toBe(400);
    expect(errorOf(missing).message).toMatch(/url/);
  });
});
