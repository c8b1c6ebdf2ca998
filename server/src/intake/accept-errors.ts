/**
 * Which failures of accepting an SMTP mail are the message's fault, so the client must not retry it: the
 * answer is then a 5xx at DATA instead of a 451 that a client would retry for days (issue 11 point 5).
 * Everything else (the store is away, a bug) stays a 451, so nothing is lost to a passing fault.
 */
import { AppError } from '../errors.js';

/**
 * PostgreSQL SQLSTATE class 22, "data exception": the content itself cannot be stored (a NUL decoded from a
 * quoted-printable body, a byte sequence invalid in UTF-8). The same message would fail the same way again.
 */
function isDataException(error: unknown): boolean {
  const code = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

/** The permanent SMTP refusal for an accept() failure, or undefined when it should stay temporary. */
export function permanentRefusalFor(error: unknown): { smtpCode: number; message: string } | undefined {
  if (error instanceof AppError && error.statusCode === 400) return { smtpCode: 554, message: `5.6.0 ${error.message}` };
  if (isDataException(error)) {
    return { smtpCode: 554, message: `5.6.0 The message cannot be stored as it is (${(error as Error).message}); it was not accepted` };
  }
  return undefined;
}
