/**
 * The one way the console talks to the API (docs/console.md §7): every call sends `Content-Type: application/json`,
 * calls made with a token carry `Authorization: Token {token}`, and a 401 on such a call is reported to
 * whoever listens (the app shell returns to the login view: the session expired).
 */

export class ApiError extends Error {
  readonly status: number;
  /** The error body's `code` and `message` (docs/api.md#answers-and-errors), when the answer carried one. */
  readonly code: string | null;
  readonly serverMessage: string | null;

  constructor(status: number, message: string, body?: { code: string; message: string }) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = body?.code ?? null;
    this.serverMessage = body?.message ?? null;
  }
}

type UnauthorizedListener = (token: string) => void;
const unauthorizedListeners = new Set<UnauthorizedListener>();

/** Listen for a 401 on a call made with `token`; returns the function that stops listening. */
export function subscribeUnauthorized(listener: UnauthorizedListener): () => void {
  unauthorizedListeners.add(listener);
  return () => {
    unauthorizedListeners.delete(listener);
  };
}

export interface ApiRequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Sent as `Authorization: Token {token}`; a 401 answer is then reported as an expired session. */
  token?: string;
  body?: unknown;
  /**
   * A body that is not JSON, sent with its own Content-Type instead of JSON's (the suppression list's CSV import,
   * docs/api.md#suppressions-apiv1suppressions). Every other call, the four of the specification among them, sends JSON.
   */
  rawBody?: { contentType: string; content: string };
  query?: Record<string, string | number | undefined | null>;
  signal?: AbortSignal;
  /** More request headers (the live stream's `Accept` and `Last-Event-ID`). */
  headers?: Record<string, string>;
}

function buildUrl(path: string, query: ApiRequestOptions['query']): string {
  // Resolved against the page so relative paths work the same in the browser and under jsdom.
  const url = new URL(path, window.location.href);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
  }
  return url.toString();
}

/** Sends the call and returns the raw response when it is 2xx; throws ApiError otherwise. */
export async function apiRequest(path: string, options: ApiRequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = {
    ...options.headers,
    'Content-Type': options.rawBody?.contentType ?? 'application/json',
  };
  if (options.token !== undefined) headers.Authorization = `Token ${options.token}`;
  const init: RequestInit = { method: options.method ?? 'GET', headers };
  if (options.rawBody !== undefined) init.body = options.rawBody.content;
  else if (options.body !== undefined) init.body = JSON.stringify(options.body);
  if (options.signal) init.signal = options.signal;

  const response = await fetch(buildUrl(path, options.query), init);
  if (response.status === 401 && options.token !== undefined) {
    const token = options.token;
    for (const listener of [...unauthorizedListeners]) listener(token);
  }
  if (!response.ok) {
    throw new ApiError(response.status, `${init.method ?? 'GET'} ${path} answered ${response.status}`, await errorBody(response));
  }
  return response;
}

/**
 * Reads an answer's body to its end without using it. The browser finishes a response only once its body is
 * consumed; one left unread stays open (API answers are `Cache-Control: no-store`, so nothing else reads it),
 * and tools that watch the network (devtools, Playwright) then never see it complete.
 */
async function drain(response: Response): Promise<void> {
  await response.arrayBuffer().catch(() => undefined);
}

/** Reads an error answer to its end and keeps its `{ error: { code, message } }`, if it is one. */
async function errorBody(response: Response): Promise<{ code: string; message: string } | undefined> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as unknown;
    const error = isRecord(body) ? body.error : undefined;
    if (isRecord(error) && typeof error.code === 'string' && typeof error.message === 'string') {
      return { code: error.code, message: error.message };
    }
  } catch {
    // not JSON: no details to keep
  }
  return undefined;
}

/** What to show a person for a failed call: the server's sentence when it gave one. */
export function errorText(error: unknown, fallback: string): string {
  return error instanceof ApiError && error.serverMessage ? error.serverMessage : fallback;
}

/** Sends a call whose answer the console does not use (docs/console.md §7: "response body is not read"). */
export async function apiSend(path: string, options: ApiRequestOptions = {}): Promise<void> {
  await drain(await apiRequest(path, options));
}

/** Like apiRequest, then parses the JSON body (a body that is not JSON is an error). */
export async function apiJson(path: string, options: ApiRequestOptions = {}): Promise<unknown> {
  const response = await apiRequest(path, options);
  return (await response.json()) as unknown;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `data` array of a `{ data: [...] }` answer, or an error naming the call. */
export function dataOf<T>(body: unknown, call: string): T[] {
  if (!isRecord(body) || !Array.isArray(body.data)) throw new Error(`${call}: the answer is not { data: [...] }`);
  return body.data as T[];
}

/** The first item of a `{ data: [item] }` answer, or an error naming the call. */
export function firstOf<T>(body: unknown, call: string): T {
  const [first] = dataOf<T>(body, call);
  if (first === undefined) throw new Error(`${call}: the answer's data is empty`);
  return first;
}
