import type { MailListResponse } from '@outbox/contract';
import { QueryClient } from '@tanstack/react-query';
import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { http, HttpResponse } from 'msw';
import { App } from '../app/app';
import { AppProvider } from '../app/provider';
import { buildQueueHealth } from './factories';
import { server } from './server';

export const TOKEN = 'test-token-1';

/** A fresh client per test: nothing cached leaks between tests, and failures are not retried. */
export function createTestQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: { queries: { retry: false, staleTime: 0 }, mutations: { retry: false } },
  });
}

/** The app as main.tsx mounts it; `firstPageWaitMs` replaces the login's wait for its first page (FIRST_PAGE_WAIT_MS). */
export function renderApp(options: { firstPageWaitMs?: number } = {}) {
  // The list view's health strip polls queue health as soon as a session is held.
  server.use(http.get('/api/v1/queue/health', () => HttpResponse.json({ data: [buildQueueHealth()] })));
  // And the alert banner reads the alert rules (none firing).
  server.use(
    http.get('/api/v1/alerts', () =>
      HttpResponse.json({ data: [], meta: { at: '2026-11-23T10:00:00.000Z', firing: 0, evaluationIntervalSeconds: 30, history: [] } }),
    ),
  );
  const user = userEvent.setup();
  const queryClient = createTestQueryClient();
  const view = render(
    <AppProvider queryClient={queryClient}>
      <App {...options} />
    </AppProvider>,
  );
  return { user, queryClient, ...view };
}

/** Answers every list call with `list`, and records each one's URL (the view's query string). */
export function handleMailList(list: MailListResponse): URL[] {
  const urls: URL[] = [];
  server.use(
    http.get('/api/v1/mail/list', ({ request }) => {
      urls.push(new URL(request.url));
      return HttpResponse.json(list);
    }),
  );
  return urls;
}

/** Answers the login call with `token` and records what was posted. */
export function handleLogin(token: string = TOKEN) {
  const requests: Request[] = [];
  server.use(
    http.post('/api/v1/login', ({ request }) => {
      requests.push(request.clone());
      return HttpResponse.json({ data: [{ token, username: 'admin', expiresAt: '2026-11-24T00:00:00.000Z' }] });
    }),
  );
  return requests;
}

/** Records logout calls (the console fires one and ignores its answer). */
export function handleLogout() {
  const requests: Request[] = [];
  server.use(
    http.post('/api/v1/logout', ({ request }) => {
      requests.push(request.clone());
      return HttpResponse.json({ data: [{ loggedOut: true }] });
    }),
  );
  return requests;
}

/** Fills the login form and submits it with the button. */
export async function logIn(user: ReturnType<typeof userEvent.setup>, username = 'admin', password = 'secret') {
  if (username) await user.type(screen.getByLabelText('Username'), username);
  if (password) await user.type(screen.getByLabelText('Password'), password);
  await user.click(screen.getByRole('button', { name: 'Login' }));
}
