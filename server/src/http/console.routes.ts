/**
 * Serves the built console (web/dist) at `/`, with the security headers and CSP of ARCHITECTURE.md#security. The
 * console is a single screen with no routes of its own (docs/console.md §2), so there is no history fallback.
 */
import fs from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';

export const consoleRoutes: FastifyPluginAsync<{ consoleDir: string }> = async (app, { consoleDir }) => {
  if (!fs.existsSync(path.join(consoleDir, 'index.html'))) {
    app.log.warn({ consoleDir }, 'console not built: run `npm run build` (npm start does it) to serve it');
    app.get('/', async (_request, reply) =>
      reply.status(503).type('text/plain').send('The console is not built yet. Run `npm run build`, or use `npm start`.'),
    );
    return;
  }
  await app.register(fastifyStatic, {
    root: consoleDir,
    prefix: '/',
    index: ['index.html'],
    // The build writes .br and .gz beside each file (web/vite.config.ts): sent as they are to clients that accept them.
    preCompressed: true,
    // Hashed asset names change with every build; index.html must always be asked for again.
    setHeaders(response, filePath) {
      response.setHeader('cache-control', filePath.endsWith('.html') ? 'no-cache' : 'public, max-age=31536000, immutable');
    },
  });
};
