/**
 * Which failures of accepting an SMTP mail are the message's fault, so the client must not retry it: the
 * answer is then a 5xx at DATA instead of a 451 that a client would retry for days.
 * Everything else (the store is away, a bug) stays a 451, so nothing is lost to a passing fault.
 */
import { AppError } from '../errors.js';
import { isStoreFullError } from '../store-errors.js';

/**
 * PostgreSQL SQLSTATE class 22, "data exception": the content itself cannot be stored (a NUL decoded from a
 * quoted-printable body, a byte sequence invalid in UTF-8). The same message would fail the same way again.
 */
function isDataException(error: unknown): boolean {
  const code = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

/**
 * The SMTP answer for an accept() failure that is not a plain 451: a permanent refusal (554) for a message
 * that cannot be taken as it is, or 452 for a full store (RFC 5321: temporary, the client keeps the mail and
 * retries). Undefined: answer 451.
 */
export function smtpRefusalFor(error: unknown): { smtpCode: number; message: string } | undefined {
  if (error instanceof AppError && error.statusCode === 400) return { smtpCode: 554, message: `5.6.0 ${error.message}` };
  if (isStoreFullError(error) || (error instanceof AppError && error.statusCode === 507)) {
    return { smtpCode: 452, message: '4.3.1 Insufficient system storage: the mail store is full; try again later' };
  }
  if (isDataException(error)) {
    return { smtpCode: 554, message: `5.6.0 The message cannot be stored as it is (${(error as Error).message}); it was not accepted` };
  }
  return undefined;
}
