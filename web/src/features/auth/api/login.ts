import { useMutation } from '@tanstack/react-query';
import type { LoginRequest } from '@outbox/contract';
import { apiJson, isRecord } from '../../../lib/api-client';

export interface LoginResult {
  token: string;
  username: string;
}

/** POST /api/v1/login; resolves with data[0].token (docs/console.md §7). Any other answer is a failure. */
export async function login(credentials: LoginRequest): Promise<LoginResult> {
  const body = await apiJson('/api/v1/login', { method: 'POST', body: credentials });
  const first = isRecord(body) && Array.isArray(body.data) ? (body.data[0] as unknown) : undefined;
  const token = isRecord(first) ? first.token : undefined;
  // docs/console.md §5: an empty token is not a login.
  if (typeof token !== 'string' || token === '') throw new Error('The login answer holds no token');
  return { token, username: credentials.username };
}

export const LOGIN_FAILED_MESSAGE = 'Invalid username or password';

export function useLogin(onLoggedIn: (result: LoginResult) => void | Promise<void>) {
  return useMutation({
    mutationFn: login,
    onSuccess: onLoggedIn,
    onError: () => {
      window.alert(LOGIN_FAILED_MESSAGE);
    },
  });
}
