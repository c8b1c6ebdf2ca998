import { screen, waitFor, within } from '@testing-library/react';
import { http, HttpResponse } from 'msw';
import { describe, expect, it, vi } from 'vitest';
import { buildMail, buildMailList, buildQueueHealth, buildRelay, buildRelayHealth } from '../test/factories';
import { TOKEN, handleLogin, handleLogout, logIn, renderApp } from '../test/app-harness';
import { server } from '../test/server';
import { FIRST_PAGE_WAIT_MS } from './app';

function handleList(body = buildMailList([buildMail({ id: 7, subject: 'Hello there' })])) {
  const requests: Request[] = [];
  server.use(
    http.get('/api/v1/mail/list', ({ request }) => {
      requests.push(request.clone());
      return HttpResponse.json(body);
    }),
  );
  return requests;
}

describe('login view', () => {
  it('shows the LOGIN heading, a Username field, a masked Password field and a Login button', () => {
    renderApp();
    expect(screen.getByRole('heading', { level: 1, name: 'LOGIN' })).toBeInTheDocument();
    expect(screen.getByLabelText('Username')).toHaveAttribute('type', 'text');
    expect(screen.getByLabelText('Password')).toHaveAttribute('type', 'password');
    expect(screen.getByRole('button', { name: 'Login' })).toBeInTheDocument();
    expect(screen.queryByRole('grid')).not.toBeInTheDocument();
  });

  it('logs in, switches to the list, and sends JSON and the token header', async () => {
    const logins = handleLogin('tok-123');
    const lists = handleList();
    const { user } = renderApp();

    await logIn(user, 'admin', 'secret');

    expect(await screen.findByRole('heading', { name: 'MAILS LIST' })).toBeInTheDocument();
    expect(await screen.findByText('Hello there')).toBeInTheDocument();
    expect(screen.queryByRole('heading', { name: 'LOGIN' })).not.toBeInTheDocument();

    expect(logins).toHaveLength(1);
    const login = logins[0]!;
    expect(login.headers.get('content-type')).toBe('application/json');
    expect(login.headers.get('authorization')).toBeNull();
    expect(await login.json()).toEqual({ username: 'admin', password: 'secret' });

    expect(lists.length).toBeGreaterThanOrEqual(1);
    const list = lists[0]!;
    expect(list.headers.get('authorization')).toBe('Token tok-123');
    expect(list.headers.get('content-type')).toBe('application/json');
  });

  it('builds the list view once, with its first page: no empty "Loading…" table in between', async () => {
    handleLogin();
    let asked = false;
    let answer: () => void = () => {};
    server.use(
      http.get('/api/v1/mail/list', async () => {
        asked = true;
        await new Promise<void>((resolve) => (answer = resolve));
        return HttpResponse.json(buildMailList([buildMail({ id: 7, subject: 'Hello there' })]));
      }),
    );
    // The login waits for its first page as long as the test takes, so a loaded machine cannot outlast the wait
    // between the request and the checks below (the wait's own length is the next test's).
    const { user } = renderApp({ firstPageWaitMs: 60_000 });

    await logIn(user, 'admin', 'secret');
    // The login answered and its first page was asked for, not answered: the login view stays, its button busy.
    await waitFor(() => expect(asked).toBe(true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(screen.getByRole('button', { name: 'Login' })).toHaveAttribute('aria-busy', 'true');
    expect(screen.queryByRole('grid')).not.toBeInTheDocument();

    answer();
    expect(await screen.findByText('Hello there')).toBeInTheDocument();
    expect(screen.queryByText('Loading…')).not.toBeInTheDocument();
  });

  it(`shows the list view after ${FIRST_PAGE_WAIT_MS} ms when the first page is slower, and fills it when it comes`, async () => {
    handleLogin();
    let answer: () => void = () => {};
    server.use(
      http.get('/api/v1/mail/list', async () => {
        await new Promise<void>((resolve) => (answer = resolve));
        return HttpResponse.json(buildMailList([buildMail({ id: 7, subject: 'Hello there' })]));
      }),
    );
    const { user } = renderApp();

    await logIn(user, 'admin', 'secret');
    expect(await screen.findByRole('heading', { name: 'MAILS LIST' })).toBeInTheDocument();
    expect(screen.getByText('Loading…')).toBeInTheDocument();

    answer();
    expect(await screen.findByText('Hello there')).toBeInTheDocument();
  });

  it('submits on Enter', async () => {
    const logins = handleLogin();
    handleList();
    const { user } = renderApp();

    await user.type(screen.getByLabelText('Username'), 'admin');
    await user.type(screen.getByLabelText('Password'), 'secret{Enter}');

    expect(await screen.findByRole('heading', { name: 'MAILS LIST' })).toBeInTheDocument();
    expect(logins).toHaveLength(1);
  });

  it('posts empty fields as they are (no client-side validation)', async () => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {});
    const bodies: unknown[] = [];
    server.use(
      http.post('/api/v1/login', async ({ request }) => {
        bodies.push(await request.json());
        return HttpResponse.json({ error: { code: 'invalid_credentials', message: 'no' } }, { status: 401 });
      }),
    );
    const { user } = renderApp();

    await user.click(screen.getByRole('button', { name: 'Login' }));

    await waitFor(() => expect(alert).toHaveBeenCalledWith('Invalid username or password'));
    expect(bodies).toEqual([{ username: '', password: '' }]);
  });

  it.each([
    ['a 401', () => HttpResponse.json({ error: { code: 'invalid_credentials', message: 'x' } }, { status: 401 })],
    ['a 500', () => new HttpResponse('boom', { status: 500 })],
    ['a network error', () => HttpResponse.error()],
    ['a body that is not JSON', () => new HttpResponse('not json', { status: 200 })],
    ['an answer without a token', () => HttpResponse.json({ data: [] })],
    ['an answer with an empty token', () => HttpResponse.json({ data: [{ token: '' }] })],
  ])('alerts the exact text and stays on login on %s', async (_case, respond) => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {});
    const lists = handleList();
    server.use(http.post('/api/v1/login', respond));
    const { user } = renderApp();

    await logIn(user);

    await waitFor(() => expect(alert).toHaveBeenCalledTimes(1));
    expect(alert).toHaveBeenCalledWith('Invalid username or password');
    expect(screen.getByRole('heading', { name: 'LOGIN' })).toBeInTheDocument();
    expect(screen.queryByRole('heading', { name: 'MAILS LIST' })).not.toBeInTheDocument();
    expect(lists).toHaveLength(0);
  });

  it('never stores the token or credentials in web storage or cookies', async () => {
    handleLogin('secret-token');
    handleList();
    const { user } = renderApp();
    await logIn(user, 'admin', 'hunter2');
    await screen.findByText('Hello there');

    const stored = [
      ...Object.keys(window.localStorage).map((key) => window.localStorage.getItem(key)),
      ...Object.keys(window.sessionStorage).map((key) => window.sessionStorage.getItem(key)),
      document.cookie,
    ].join('|');
    expect(stored).not.toContain('secret-token');
    expect(stored).not.toContain('hunter2');
  });
});

describe('logout and session end', () => {
  it('Logout returns to the login view with empty fields and revokes the token', async () => {
    handleLogin('tok-9');
    handleList();
    const logouts = handleLogout();
    const { user } = renderApp();
    await logIn(user, 'admin', 'secret');
    await screen.findByRole('heading', { name: 'MAILS LIST' });

    await user.click(screen.getByRole('button', { name: 'Logout' }));

    expect(screen.getByRole('heading', { name: 'LOGIN' })).toBeInTheDocument();
    expect(screen.getByLabelText('Username')).toHaveValue('');
    expect(screen.getByLabelText('Password')).toHaveValue('');
    await waitFor(() => expect(logouts).toHaveLength(1));
    expect(logouts[0]!.headers.get('authorization')).toBe('Token tok-9');
  });

  it('a 401 on the list returns to the login view with empty fields', async () => {
    const alert = vi.spyOn(window, 'alert').mockImplementation(() => {});
    handleLogin();
    server.use(
      http.get('/api/v1/mail/list', () => HttpResponse.json({ error: { code: 'unauthorized', message: 'expired' } }, { status: 401 })),
    );
    const { user } = renderApp();
    await logIn(user);

    expect(await screen.findByRole('heading', { name: 'LOGIN' })).toBeInTheDocument();
    expect(screen.getByLabelText('Username')).toHaveValue('');
    expect(screen.getByLabelText('Password')).toHaveValue('');
    expect(alert).not.toHaveBeenCalled();
  });

  it('a 401 on a dequeue returns to the login view', async () => {
    vi.spyOn(window, 'alert').mockImplementation(() => {});
    handleLogin(TOKEN);
    handleList(buildMailList([buildMail({ id: 3, status: 0 })]));
    server.use(http.get('/api/v1/mail/:id/dequeue', () => new HttpResponse(null, { status: 401 })));
    const { user } = renderApp();
    await logIn(user);

    await user.click(await screen.findByRole('button', { name: /^Dequeue mail #\d+$/ }));

    expect(await screen.findByRole('heading', { name: 'LOGIN' })).toBeInTheDocument();
  });
});

describe('the Relays view', () => {
  it('opens from the health strip’s "Relay down", the same view as the header’s button; Esc returns to the strip', async () => {
    handleLogin();
    handleList();
    const { user } = renderApp();
    server.use(
      http.get('/api/v1/queue/health', () =>
        HttpResponse.json({ data: [buildQueueHealth({ liveWorkers: 1, relaysDown: ['sendgrid-eu'] })] }),
      ),
      http.get('/api/v1/relays', () => HttpResponse.json({ data: [buildRelay()] })),
      http.get('/api/v1/relays/health', () => HttpResponse.json({ data: [buildRelayHealth({ state: 'down' })] })),
    );
    await logIn(user);

    const strip = await screen.findByRole('region', { name: 'Queue health' });
    const relayDown = await within(strip).findByRole('button', { name: 'Relay down: sendgrid-eu' });
    await user.click(relayDown);
    const dialog = await screen.findByRole('dialog', { name: 'Relays' });
    const row = (await within(dialog).findByText('sendgrid-eu')).closest('tr')!;
    expect(await within(row).findByText('Down')).toBeVisible();
    await user.keyboard('{Escape}');
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(relayDown).toHaveFocus();

    await user.click(screen.getByRole('button', { name: 'Relays' }));
    expect(await screen.findByRole('dialog', { name: 'Relays' })).toBeVisible();
  });
});
