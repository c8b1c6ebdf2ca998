/**
 * Records every API call the console makes (page.on('request' / 'response' / 'requestfailed')), in order, with
 * its headers, payload, answer status and parsed answer body, so a test can say "the list was fetched again
 * after the delete answered" without sleeping.
 */
import type { Page, Request, Response } from '@playwright/test';
import type { MailListResponse } from '@outbox/contract';

export interface ApiCall {
  seq: number;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  /** The request payload as text (null when none was sent). */
  payload: string | null;
  status?: number;
  body?: unknown;
  failed?: boolean;
  /** Set once the answer (or the failure) is in and its body parsed. */
  done: boolean;
}

type Predicate = (call: ApiCall) => boolean;

export const isLogin: Predicate = (call) => call.method === 'POST' && call.path === '/api/v1/login';
export const isList: Predicate = (call) => call.method === 'GET' && call.path === '/api/v1/mail/list';
export const isDequeueOf =
  (id: number): Predicate =>
  (call) =>
    call.method === 'GET' && call.path === `/api/v1/mail/${id}/dequeue`;
export const isDeleteOf =
  (id: number): Predicate =>
  (call) =>
    call.method === 'DELETE' && call.path === `/api/v1/mail/${id}`;

export class Traffic {
  readonly calls: ApiCall[] = [];
  private readonly byRequest = new Map<Request, ApiCall>();
  private readonly pending = new Map<Request, Promise<void>>();
  private waiters: (() => void)[] = [];
  private seq = 0;

  private readonly stopListening: () => void;

  constructor(page: Page) {
    const onRequest = (request: Request) => {
      const url = new URL(request.url());
      if (!url.pathname.startsWith('/api/')) return;
      const call: ApiCall = {
        seq: ++this.seq,
        method: request.method(),
        path: url.pathname,
        query: url.searchParams,
        headers: request.headers(),
        payload: request.postData(),
        done: false,
      };
      this.calls.push(call);
      this.byRequest.set(request, call);
      // allHeaders() also holds the headers Chromium adds late; the test reads them once the call is done.
      this.pending.set(
        request,
        request.allHeaders().then(
          (headers) => {
            call.headers = headers;
          },
          () => undefined,
        ),
      );
      this.notify();
    };
    const onResponse = (response: Response) => {
      const call = this.byRequest.get(response.request());
      if (!call) return;
      call.status = response.status();
      void Promise.all([this.pending.get(response.request()), response.text().catch(() => '')]).then(([, text]) => {
        try {
          call.body = text === '' ? undefined : (JSON.parse(text) as unknown);
        } catch {
          call.body = text;
        }
        call.done = true;
        this.notify();
      });
    };
    const onRequestFailed = (request: Request) => {
      const call = this.byRequest.get(request);
      if (!call) return;
      call.failed = true;
      void Promise.resolve(this.pending.get(request)).then(() => {
        call.done = true;
        this.notify();
      });
    };
    page.on('request', onRequest);
    page.on('response', onResponse);
    page.on('requestfailed', onRequestFailed);
    this.stopListening = () => {
      page.off('request', onRequest);
      page.off('response', onResponse);
      page.off('requestfailed', onRequestFailed);
    };
  }

  /** Stops recording: the page may serve the worker's next test (`reusePage` in fixtures.ts), with a Traffic of its own. */
  dispose(): void {
    this.stopListening();
  }

  /** The sequence number of the last call seen: pass it as `after` to wait for a later call. */
  mark(): number {
    return this.seq;
  }

  find(predicate: Predicate, after = 0): ApiCall[] {
    return this.calls.filter((call) => call.seq > after && predicate(call));
  }

  count(predicate: Predicate, after = 0): number {
    return this.find(predicate, after).length;
  }

  /** The first call after `after` that matches, once its answer is in. */
  async next(predicate: Predicate, after: number, timeoutMs = 10_000): Promise<ApiCall> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const call = this.calls.find((candidate) => candidate.seq > after && candidate.done && !candidate.failed && predicate(candidate));
      if (call) return call;
      const left = deadline - Date.now();
      if (left <= 0) {
        const seen = this.calls.filter((c) => c.seq > after).map((c) => `${c.method} ${c.path} ${c.status ?? (c.failed ? 'failed' : '…')}`);
        throw new Error(`No matching API call after #${after} within ${timeoutMs} ms; seen: ${seen.join(', ') || 'none'}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The next successful list answer after `after`, parsed. */
  async nextList(after: number): Promise<MailListResponse> {
    const call = await this.next((c) => isList(c) && c.status === 200, after);
    return call.body as MailListResponse;
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}
