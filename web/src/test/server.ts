import { http, HttpResponse } from 'msw';
import { setupServer } from 'msw/node';

/**
 * Every test adds the handlers it needs; an unhandled request fails the test. The one default: the live
 * stream answers 404, as a server without live updates does, so the console stops asking (tests of live
 * updates replace it).
 */
export const server = setupServer(
  http.get('/api/v1/events', () => HttpResponse.json({ error: { code: 'not_found', message: 'no live updates' } }, { status: 404 })),
  // The drawer's webhook deliveries: none unless a test says otherwise.
  http.get('/api/v1/mail/:id/webhook-deliveries', () => HttpResponse.json({ data: [] })),
);
