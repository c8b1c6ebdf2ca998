import { useEffect } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { LoginView, useSession } from '../features/auth';
import { MailsListView, mailKeys } from '../features/mails';
import { subscribeUnauthorized } from '../lib/api-client';

/**
 * The login/list switch (docs/console.md §2). The auth feature owns the session; the app hands its token to the
 * mails feature. A 401 on a mail call ends the session (it expired) and shows the login view again.
 */
export function App() {
  const { session, start, end, expire } = useSession();
  const queryClient = useQueryClient();
  const token = session?.token ?? '';

  useEffect(() => subscribeUnauthorized(expire), [expire]);

  // Nothing of a finished session stays in the cache for the next one.
  useEffect(() => {
    if (token === '') queryClient.removeQueries({ queryKey: mailKeys.all });
  }, [token, queryClient]);

  return token === '' ? <LoginView onLoggedIn={start} /> : <MailsListView key={token} token={token} onLogout={end} />;
}
