/**
 * What one image through the remote-image proxy costs the server, beside the mail detail the
 * console asks for anyway: `GET /api/v1/mail/{id}` (A) and `GET /api/v1/mail/{id}/remote-image` of a 40 KiB
 * image from a loopback image host (B), in alternating blocks so both see the same machine. The proxy reads the
 * mail's detail itself (to check the URL), so B − A is the fetch and the check. Prints requests per second and
 * process CPU per request (the image host runs in this process too, so B's CPU includes serving the image).
 *
 *   npx tsx bench/remote-image.ts [--requests 50] [--rounds 6]
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../server/src/app.js';
import { ManualClock } from '../server/src/clock.js';
import { openStore } from '../server/src/store/connection.js';
import { describeSetup, makeTempDir, printTable, removeDir, setupLine, warnIfBusy, writeResult } from './support/common.js';
import { parseBenchArgs, wholeNumberOption } from './support/options.js';

const { requests: REQUESTS, rounds: ROUNDS } = parseBenchArgs({ requests: wholeNumberOption(50), rounds: wholeNumberOption(6) });
const IMAGES = 20;

const image = Buffer.alloc(40 * 1024, 7);
const host = http.createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'image/png', 'content-length': image.length }).end(image);
});
await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
const imageUrl = (n: number) => `http://127.0.0.1:${(host.address() as AddressInfo).port}/img/${n}.png?campaign=bench&amp;n=${n}`;

const dataDir = makeTempDir('outbox-bench-images-');
const store = await openStore({ dataDir });
const { app, services } = await buildApp({
  store,
  clock: new ManualClock(Date.now()),
  passwordCost: 2 ** 14,
  remoteImages: { allowPrivate: true },
});
await services.auth.addOperator('bench', 'bench password 1');
const login = await app.inject({ method: 'POST', url: '/api/v1/login', payload: { username: 'bench', password: 'bench password 1' } });
const token = (login.json() as { data: Array<{ token: string }> }).data[0]!.token;
const apiKey = await services.auth.createApiKey('bench');
// A newsletter: text and HTML (multipart, so the detail parses the stored bytes), 20 images, ~20 KB of markup.
const html = Array.from({ length: IMAGES }, (_, n) => `<p>${'Paragraph of a newsletter. '.repeat(30)}</p><img src="${imageUrl(n)}">`).join(
  '',
);
const submitted = await app.inject({
  method: 'POST',
  url: '/api/v1/mail',
  headers: { authorization: `Token ${apiKey}` },
  payload: { fromMail: 'news@example.com', to: [{ recipientMail: 'ann@example.com' }], subject: 'Bench', text: 'Text part', html },
});
const id = (submitted.json() as { data: Array<{ id: number }> }).data[0]!.id;
const headers = { authorization: `Token ${token}` };

const kinds = {
  detail: (_n: number) => app.inject({ method: 'GET', url: `/api/v1/mail/${id}`, headers }),
  proxy: (n: number) =>
    app.inject({
      method: 'GET',
      url: `/api/v1/mail/${id}/remote-image`,
      query: { url: imageUrl(n % IMAGES).replace('&amp;', '&') },
      headers,
    }),
};
const totals = { detail: { wallMs: 0, cpuUs: 0 }, proxy: { wallMs: 0, cpuUs: 0 } };
for (let round = 0; round < ROUNDS + 1; round += 1) {
  for (const kind of ['detail', 'proxy'] as const) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let n = 0; n < REQUESTS; n += 1) {
      const response = await kinds[kind](n);
      if (response.statusCode !== 200) throw new Error(`${kind} answered ${response.statusCode}: ${response.body.slice(0, 200)}`);
    }
    const used = process.cpuUsage(cpu);
    if (round === 0) continue; // warm-up
    totals[kind].wallMs += performance.now() - started;
    totals[kind].cpuUs += used.user + used.system;
  }
}
const count = REQUESTS * ROUNDS;
const figures = Object.fromEntries(
  Object.entries(totals).map(([kind, total]) => [
    kind,
    { perSecond: Math.round((count / total.wallMs) * 1000), cpuMsPerRequest: Math.round(total.cpuUs / count / 10) / 100 },
  ]),
);
const setup = describeSetup({ engine: 'sqlite', requests: REQUESTS, rounds: ROUNDS, imageBytes: image.length });
warnIfBusy(setup);
console.log(setupLine(setup));
printTable(
  ['request', 'per second', 'CPU ms / request'],
  Object.entries(figures).map(([kind, figure]) => [kind, figure.perSecond, figure.cpuMsPerRequest]),
);
writeResult('remote-image', setup, figures);
await app.close();
await store.close();
host.close();
removeDir(dataDir);
