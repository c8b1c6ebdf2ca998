import { useCallback, useEffect, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { AuditButton, auditKeys } from '../features/audit';
import { LoginView, useSession, type LoginResult } from '../features/auth';
import { BulkBar } from '../features/bulk';
import { HealthStrip, healthKeys } from '../features/health';
import { MailsListView, initialListParams, mailKeys, prefetchMailList, type MailSelection } from '../features/mails';
import { subscribeUnauthorized } from '../lib/api-client';

/**
 * The login/list switch (docs/console.md §2). The auth feature owns the session; the app hands its token to the
 * mails feature. A 401 on a mail call ends the session (it expired) and shows the login view again. The app also
 * fills the list view's slots with the features that never import it: queue health, the audit log, bulk actions.
 */
export function App() {
  const { session, start, end, expire } = useSession();
  const queryClient = useQueryClient();
  const token = session?.token ?? '';

  useEffect(() => subscribeUnauthorized(expire), [expire]);

  // login → rows is the first thing an operator waits for. The first page is asked for with the login's
  // answer, and the session starts once it is in (at most FIRST_PAGE_WAIT_MS later; the Login button stays
  // busy meanwhile): the list view is built once, with its rows, not empty and then again with them.
  // Each login gets a fresh login view for the next time it shows: a session ended at once (a 401 on that
  // first page can land in the same render as the login) still finds the fields empty.
  const [logins, setLogins] = useState(0);
  const onLoggedIn = useCallback(
    async (result: LoginResult) => {
      await prefetchMailList(queryClient, result.token, initialListParams());
      setLogins((count) => count + 1);
      start(result);
    },
    [queryClient, start],
  );

  // Nothing of a finished session stays in the cache for the next one.
  useEffect(() => {
    if (token === '') {
      queryClient.removeQueries({ queryKey: mailKeys.all });
      queryClient.removeQueries({ queryKey: healthKeys.all });
      queryClient.removeQueries({ queryKey: auditKeys.all });
    }
  }, [token, queryClient]);

  const renderSelection = useCallback(
    (selection: MailSelection, onActed: () => void) => (
      <BulkBar
        token={token}
        selection={selection}
        onActed={() => {
          onActed();
          void queryClient.invalidateQueries({ queryKey: healthKeys.all });
          void queryClient.invalidateQueries({ queryKey: auditKeys.all });
        }}
      />
    ),
    [token, queryClient],
  );

  return token === '' ? (
    <LoginView key={logins} onLoggedIn={onLoggedIn} />
  ) : (
    <MailsListView
      key={token}
      token={token}
      onLogout={end}
      headerActions={<AuditButton token={token} />}
      aboveTable={<HealthStrip token={token} />}
      renderSelection={renderSelection}
    />
  );
}
