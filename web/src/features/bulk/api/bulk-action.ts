import { useMutation } from '@tanstack/react-query';
import type { BulkAction, BulkResult } from '@outbox/contract';
import { ApiError, apiJson, isRecord } from '../../../lib/api-client';

/** The bulk call's target: ids of the rows, or the list's filter with the count the operator saw. */
export type BulkTarget = { ids: number[] } | { filter: Record<string, string>; expectedCount: number };

export interface BulkRequest {
  action: BulkAction;
  target: BulkTarget;
  /** true: the server answers what would move and be skipped, moving nothing (docs/api.md, bulk actions). */
  dryRun: boolean;
}

function isBulkResult(value: unknown): value is BulkResult {
  return isRecord(value) && typeof value.done === 'number' && Array.isArray(value.skipped);
}

/** POST /api/v1/mail/bulk */
export async function postBulkAction(token: string, { action, target, dryRun }: BulkRequest): Promise<BulkResult> {
  const body = await apiJson('/api/v1/mail/bulk', { method: 'POST', token, body: { action, ...target, ...(dryRun ? { dryRun } : {}) } });
  const result = isRecord(body) && Array.isArray(body.data) ? (body.data[0] as unknown) : undefined;
  if (!isBulkResult(result)) throw new Error('The bulk answer is not { data: [{ done, skipped }] }');
  return result;
}

/** 409 count_changed: the filter now matches far more mails than the operator saw; nothing was changed. */
export function isCountChanged(error: unknown): boolean {
  return error instanceof ApiError && error.status === 409;
}

export function useBulkAction(token: string) {
  return useMutation({
    mutationKey: ['bulk'],
    mutationFn: (request: BulkRequest) => postBulkAction(token, request),
  });
}
