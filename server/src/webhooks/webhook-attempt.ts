/**
 * One attempt of a delivery: the event's body signed with the endpoint's secret (and its previous secret while
 * that is still valid, so a receiver mid-rotation accepts either), sent, and its answer judged into the outcome
 * the commit records.
 */
import type { WebhookEndpointRow } from '../store/schema.js';
import type { WebhookJob } from './endpoint-queues.js';
import { judgeAttempt, signatureHeader, webhookBody } from './webhook-policy.js';
import type { AttemptOutcome } from './webhook-dispatch.repository.js';
import type { HttpAttempt, WebhookSender } from './webhook-sender.js';

/** Sends one attempt made at `at`; never throws (a thrown error becomes the attempt's error). */
export async function sendAttempt(sender: WebhookSender, job: WebhookJob, endpoint: WebhookEndpointRow, at: number): Promise<HttpAttempt> {
  const body = webhookBody(job.event);
  const timestamp = Math.floor(at / 1000);
  const secrets = [endpoint.secret];
  if (endpoint.previous_secret && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > at)
    secrets.push(endpoint.previous_secret);
  try {
    return await sender.send({
      url: endpoint.url,
      headers: {
        'webhook-id': job.event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, job.event.id, timestamp, body),
      },
      body,
    });
  } catch (error) {
    return { httpStatus: null, retryAfter: undefined, response: '', error: String(error), durationMs: 0 };
  }
}

/**
 * What an answer makes of its delivery: succeeded, retrying at its next time, or failed (`giveUp`: failed
 * without judging, as when its event is gone); `gone` when the endpoint answered 410.
 */
export function judgeOutcome(
  job: WebhookJob,
  result: HttpAttempt,
  at: number,
  options: { giveUp: boolean; schedule: readonly number[]; now: number; random?: (() => number) | undefined },
): { outcome: AttemptOutcome; gone: boolean } {
  const step = job.step + 1;
  const verdict = options.giveUp
    ? ({ kind: 'failed' } as const)
    : judgeAttempt(result, step, { schedule: options.schedule, now: options.now, random: options.random });
  return {
    outcome: {
      deliveryId: job.deliveryId,
      endpointId: job.endpointId,
      owner: job.owner,
      at,
      httpStatus: result.httpStatus,
      durationMs: result.durationMs,
      response: result.response,
      error: result.error,
      succeeded: verdict.kind === 'succeeded',
      state: verdict.kind === 'succeeded' ? 'succeeded' : verdict.kind === 'retry' ? 'retrying' : 'failed',
      step,
      nextAttemptAt: verdict.kind === 'retry' ? options.now + verdict.delayMs : null,
    },
    gone: verdict.kind === 'gone',
  };
}
