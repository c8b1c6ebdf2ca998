import { apiSend } from '../../../lib/api-client';

/**
 * POST /api/v1/logout revokes the token on the server (beyond the spec). The console forgets the token
 * whatever the answer, so the result is ignored.
 */
export async function logout(token: string): Promise<void> {
  try {
    await apiSend('/api/v1/logout', { method: 'POST', token });
  } catch {
    // Ignored on purpose: the session is cleared locally either way.
  }
}
