/**
 * The test's own client of the real API, used behind the console's back: to find mails by status, to set up
 * races (dequeue or delete a mail the console still shows) and to check what the server holds afterwards.
 */
import { expect, type APIRequestContext } from '@playwright/test';
import type { Mail, MailListResponse, MailSort } from '@outbox/contract';

// Written out from docs/console.md §4 on purpose rather than imported from contract/: the suite checks the console
// against the spec, so it must not take its expectations from the table it is checking.
export const Status = {
  Queued: 0,
  Dequeued: 1,
  Processing: 2,
  ProviderSent: 3,
  ProviderError: 4,
  Error: 5,
} as const;
export type StatusCode = (typeof Status)[keyof typeof Status];

export const STATUS_NAMES = ['Queued', 'Dequeued', 'Processing', 'ProviderSent', 'ProviderError', 'Error'] as const;

export interface ListQuery {
  status?: number | number[];
  limit?: number;
  sort?: MailSort;
  order?: 'asc' | 'desc';
  q?: string;
}

export class Api {
  constructor(
    private readonly request: APIRequestContext,
    readonly token: string,
  ) {}

  static async login(request: APIRequestContext, username: string, password: string): Promise<Api> {
    // A login hashes the password with argon2id (slow on purpose), at most two at once: on a loaded machine that can take longer than the 5 s other calls are given.
    const response = await request.post('/api/v1/login', { data: { username, password }, timeout: 30_000 });
    expect(response.status(), 'API login').toBe(200);
    const body = (await response.json()) as { data: { token: string }[] };
    const token = body.data[0]?.token;
    expect(token, 'data[0].token').toBeTruthy();
    return new Api(request, token!);
  }

  private get headers() {
    return { Authorization: `Token ${this.token}` };
  }

  async list(query: ListQuery = {}): Promise<MailListResponse> {
    const params: Record<string, string | number> = {};
    if (query.status !== undefined) params.status = Array.isArray(query.status) ? query.status.join(',') : query.status;
    if (query.limit !== undefined) params.limit = query.limit;
    if (query.sort !== undefined) params.sort = query.sort;
    if (query.order !== undefined) params.order = query.order;
    if (query.q !== undefined) params.q = query.q;
    const response = await this.request.get('/api/v1/mail/list', { headers: this.headers, params });
    expect(response.status(), 'GET /api/v1/mail/list').toBe(200);
    return (await response.json()) as MailListResponse;
  }

  /** Submits one mail with an API key (POST /api/v1/mail); with WORKER=off it stays Queued. */
  async submit(apiKey: string, mail: Record<string, unknown>): Promise<Mail> {
    const response = await this.request.post('/api/v1/mail', { headers: { Authorization: `Token ${apiKey}` }, data: mail });
    expect(response.status(), `POST /api/v1/mail: ${await response.text()}`).toBe(202);
    return ((await response.json()) as { data: Mail[] }).data[0]!;
  }

  async total(): Promise<number> {
    return (await this.list({ limit: 1 })).meta.total;
  }

  /** Every mail id the server holds now (without `limit` the list answers every matching mail). */
  async ids(): Promise<number[]> {
    return (await this.list()).data.map((mail) => mail.id);
  }

  async mailsWithStatus(status: StatusCode, limit = 5): Promise<Mail[]> {
    return (await this.list({ status, limit })).data;
  }

  /** GET /api/v1/mail/{id}/dequeue; returns the HTTP status. */
  async dequeue(id: number): Promise<number> {
    return (await this.request.get(`/api/v1/mail/${id}/dequeue`, { headers: this.headers })).status();
  }

  /** DELETE /api/v1/mail/{id}; returns the HTTP status. */
  async remove(id: number): Promise<number> {
    return (await this.request.delete(`/api/v1/mail/${id}`, { headers: this.headers })).status();
  }

  /** Submits many mails in one batch (POST /api/v1/mail with an array); with WORKER=off they stay Queued. */
  async submitMany(apiKey: string, mails: Record<string, unknown>[]): Promise<Mail[]> {
    const response = await this.request.post('/api/v1/mail', { headers: { Authorization: `Token ${apiKey}` }, data: mails });
    expect(response.status(), `POST /api/v1/mail (batch): ${await response.text()}`).toBe(202);
    return ((await response.json()) as { data: Mail[] }).data;
  }

  /** POST /api/v1/mail/bulk; returns the HTTP status and the body. */
  /**
   * Takes mails a test added out of the shared store again (dequeue, then delete), so the specs after it see
   * the seeded mails only: several count rows, totals or due mails against the seed.
   */
  async purge(ids: readonly number[]): Promise<void> {
    for (let start = 0; start < ids.length; start += 1000) {
      const chunk = ids.slice(start, start + 1000);
      expect((await this.bulk({ action: 'dequeue', ids: chunk })).status).toBe(200);
      expect((await this.bulk({ action: 'delete', ids: chunk })).status).toBe(200);
    }
  }

  async bulk(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
    const response = await this.request.post('/api/v1/mail/bulk', { headers: this.headers, data: body });
    return { status: response.status(), body: await response.json() };
  }

  /** GET /api/v1/queue/health */
  async health(): Promise<any> {
    const response = await this.request.get('/api/v1/queue/health', { headers: this.headers });
    expect(response.status(), 'GET /api/v1/queue/health').toBe(200);
    return ((await response.json()) as { data: unknown[] }).data[0];
  }

  /** POST /api/v1/logout with `token` (beyond the spec: revokes it). */
  async revoke(token: string): Promise<number> {
    return (await this.request.post('/api/v1/logout', { headers: { Authorization: `Token ${token}` } })).status();
  }

  /** GET /api/v1/mail/list with `token`; returns the HTTP status. */
  async listStatusWith(token: string): Promise<number> {
    return (await this.request.get('/api/v1/mail/list', { headers: { Authorization: `Token ${token}` }, params: { limit: 1 } })).status();
  }
}
