import { useCallback, useEffect, useMemo, useState } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { ApplicationsButton, applicationKeys } from '../features/applications';
import { AuditButton, auditKeys } from '../features/audit';
import { LoginView, useSession, type LoginResult } from '../features/auth';
import { BulkBar } from '../features/bulk';
import { AlertBanner, HealthStrip, alertKeys, healthKeys, instancesKeys } from '../features/health';
import { MailsListView, initialListParams, mailKeys, prefetchMailList, type MailFilters, type MailSelection } from '../features/mails';
import { createLiveStatisticsRefresh, OverviewButton, overviewKeys } from '../features/overview';
import { RelaysButton, relayKeys } from '../features/relays';
import { SuppressionsButton, suppressionKeys } from '../features/suppressions';
import { WebhooksButton, webhookKeys } from '../features/webhooks';
import { subscribeUnauthorized } from '../lib/api-client';

/**
 * How long a login waits for its first page before the list view shows without it ("Loading…"). The first
 * page at a million mails answers in a few ms; the wait saves building the view twice (empty, then filled:
 * ~100 ms of script, layout and paint on a 2-core machine), and a slow store still gets the view at once.
 */
export const FIRST_PAGE_WAIT_MS = 250;

/** Settles when `work` does, or after `ms`, whichever comes first. */
function withinMs(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([work.then(() => undefined), waited]).finally(() => clearTimeout(timer));
}

/**
 * The login/list switch (docs/console.md §2). The auth feature owns the session; the app hands its token to the
 * mails feature. A 401 on a mail call ends the session (it expired) and shows the login view again. The app also
 * fills the list view's slots with the features that never import it: queue health, the audit log, bulk actions, the Overview, applications, relays, webhooks, suppressions.
 */
export function App({ firstPageWaitMs = FIRST_PAGE_WAIT_MS }: { firstPageWaitMs?: number } = {}) {
  const { session, start, end, expire } = useSession();
  const queryClient = useQueryClient();
  const token = session?.token ?? '';

  useEffect(() => subscribeUnauthorized(expire), [expire]);

  // login → rows is the first thing an operator waits for. The first page is asked for with the login's
  // answer, and the session starts once it is in (at most firstPageWaitMs later; the Login button stays
  // busy meanwhile): the list view is built once, with its rows, not empty and then again with them.
  // Each login gets a fresh login view for the next time it shows: a session ended at once (a 401 on that
  // first page can land in the same render as the login) still finds the fields empty.
  const [logins, setLogins] = useState(0);
  const onLoggedIn = useCallback(
    async (result: LoginResult) => {
      await withinMs(prefetchMailList(queryClient, result.token, initialListParams()), firstPageWaitMs);
      setLogins((count) => count + 1);
      start(result);
    },
    [queryClient, start, firstPageWaitMs],
  );

  // Nothing of a finished session stays in the cache for the next one.
  useEffect(() => {
    if (token === '') {
      queryClient.removeQueries({ queryKey: mailKeys.all });
      queryClient.removeQueries({ queryKey: healthKeys.all });
      queryClient.removeQueries({ queryKey: instancesKeys.all });
      queryClient.removeQueries({ queryKey: alertKeys.all });
      queryClient.removeQueries({ queryKey: auditKeys.all });
      queryClient.removeQueries({ queryKey: webhookKeys.all });
      queryClient.removeQueries({ queryKey: suppressionKeys.all });
      queryClient.removeQueries({ queryKey: applicationKeys.all });
      queryClient.removeQueries({ queryKey: overviewKeys.all });
      queryClient.removeQueries({ queryKey: relayKeys.all });
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

  // The Overview's click on an application: the list shows that application's mails (a new object each time,
  // so choosing the same one again after clearing the chip applies it again). Kept with its session: the next
  // session's list starts from its own address.
  const [filterRequest, setFilterRequest] = useState<{ token: string; filters: Partial<MailFilters> } | null>(null);
  const openApplication = useCallback(
    (application: { id: number; name: string }) =>
      setFilterRequest({ token, filters: { application: String(application.id), applicationName: application.name } }),
    [token],
  );

  // The Overview's figures follow the mails the live updates report (throttled; features/overview).
  const liveStatistics = useMemo(() => createLiveStatisticsRefresh(queryClient), [queryClient]);
  useEffect(() => () => liveStatistics.stop(), [liveStatistics]);

  // The Relays view opens from the header and from the health strip's "Relay down": one view, its state here,
  // kept with its session (a view open at logout is not open at the next login).
  const [relaysOpenFor, setRelaysOpenFor] = useState<string | null>(null);
  const openRelays = useCallback(() => setRelaysOpenFor(token), [token]);
  const setRelaysOpen = useCallback((isOpen: boolean) => setRelaysOpenFor(isOpen ? token : null), [token]);

  return token === '' ? (
    <LoginView key={logins} onLoggedIn={onLoggedIn} />
  ) : (
    <MailsListView
      key={token}
      token={token}
      onLogout={end}
      filterRequest={filterRequest?.token === token ? filterRequest : null}
      onMailsChanged={liveStatistics.onMailsChanged}
      headerActions={
        <>
          <OverviewButton token={token} onOpenApplication={openApplication} />
          <ApplicationsButton token={token} />
          <RelaysButton token={token} isOpen={relaysOpenFor === token} onOpenChange={setRelaysOpen} />
          <WebhooksButton token={token} />
          <SuppressionsButton token={token} />
          <AuditButton token={token} />
        </>
      }
      aboveTable={
        <>
          <AlertBanner token={token} />
          <HealthStrip token={token} onOpenRelays={openRelays} />
        </>
      }
      renderSelection={renderSelection}
    />
  );
}
