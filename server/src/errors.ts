/**
 * Typed errors carry the HTTP status and the machine code of docs/api.md#answers-and-errors. Services throw them; the HTTP
 * error handler turns them into `{ error: { code, message } }`; the CLI prints the message.
 */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (code: string, message: string) => new AppError(400, code, message);
export const unauthorized = (code: string, message: string) => new AppError(401, code, message);
export const forbidden = (code: string, message: string) => new AppError(403, code, message);
export const notFound = (code: string, message: string) => new AppError(404, code, message);
export const conflict = (code: string, message: string) => new AppError(409, code, message);

/** A 429 that says when to come back; the HTTP layer sends it as `Retry-After`. */
export class RateLimitError extends AppError {
  constructor(
    code: string,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, code, message);
    this.name = 'RateLimitError';
  }
}

export const tooManyRequests = (code: string, message: string, retryAfterSeconds: number) =>
  new RateLimitError(code, message, retryAfterSeconds);
