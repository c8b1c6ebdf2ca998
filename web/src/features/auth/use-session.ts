import { useCallback, useState } from 'react';
import { logout } from './api/logout';
import type { LoginResult } from './api/login';

export interface Session {
  token: string;
  username: string;
}

/**
 * The session lives in React state only (docs/console.md §4, ARCHITECTURE.md#security): never in localStorage, sessionStorage
 * or a cookie, so a reload logs the operator out. The password is never kept after the login call.
 */
export function useSession() {
  const [session, setSession] = useState<Session | null>(null);

  const start = useCallback((result: LoginResult) => {
    // docs/console.md §5: an empty token is not a session.
    setSession(result.token === '' ? null : { token: result.token, username: result.username });
  }, []);

  const end = useCallback(() => {
    if (session) void logout(session.token);
    setSession(null);
  }, [session]);

  /** A 401 on a call made with `token`: forget the session if it is still the current one. */
  const expire = useCallback((token: string) => {
    setSession((current) => (current?.token === token ? null : current));
  }, []);

  return { session, start, end, expire };
}
