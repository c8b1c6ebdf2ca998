/**
 * The interactive API reference at `/api/docs` (Swagger UI), drawn from the same document as
 * `/api/openapi.json`: @fastify/swagger builds it from the route schemas that validate requests and
 * serialise answers, so the reference cannot drift from what the server does.
 *
 * It runs under the console's CSP unchanged: the page @fastify/swagger-ui serves has no inline script (its
 * start-up code is the file `static/swagger-initializer.js`), Swagger UI sets styles through the DOM rather
 * than inline `style` attributes, draws its icons from `data:` images (already allowed by `img-src`), and
 * "Try it out" calls this same origin (`connect-src 'self'`). Two parts would need more, so they are left
 * out rather than allowed: the validator badge (an image from validator.swagger.io) and the top bar, whose
 * Swagger logo is an SVG carrying a `<style>` element that `style-src 'self'` blocks (checked in Chromium:
 * with both gone the page loads without a single CSP report). The top bar's "Explore" box, which loads any
 * other document by URL, goes with it.
 */
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';

export const API_DOCS_PREFIX = '/api/docs';

export const apiDocsRoutes: FastifyPluginAsync = async (app) => {
  await app.register(swaggerUi, {
    routePrefix: API_DOCS_PREFIX,
    validatorUrl: false,
    uiConfig: {
      layout: 'BaseLayout',
      // One screen per route group is easier to read than everything open at once.
      docExpansion: 'list',
      deepLinking: true,
      // The Authorize dialog keeps the token only in this page's memory, like the console.
      persistAuthorization: false,
    },
  });
};
