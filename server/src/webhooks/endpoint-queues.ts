/**
 * The dispatcher's local queues: the deliveries it holds, one queue per endpoint, started at most `concurrency`
 * at once and `perEndpoint` per endpoint, so a slow receiver holds its own share of the requests and no more.
 */
/** A delivery this dispatcher holds under a claim, with the event it carries. */
export interface WebhookJob {
  deliveryId: number;
  endpointId: number;
  step: number;
  /** The claim (lease owner) that holds it. */
  owner: string;
  leaseUntil: number;
  event: { id: string; type: string; created_at: number; payload: string };
}

export interface EndpointQueues {
  enqueue(job: WebhookJob): void;
  /**
   * Offers `start` each job the limits let start now, endpoint by endpoint. A job `start` takes (answers true)
   * is in flight until `finished`; one it declines leaves the queue all the same.
   */
  startWithinLimits(start: (job: WebhookJob) => boolean): void;
  finished(job: WebhookJob): void;
  /** Jobs waiting to start. */
  readonly queued: number;
  readonly inFlight: number;
  /** Forgets the waiting jobs (a stopping dispatcher gives their claims back). */
  clear(): void;
}

export function createEndpointQueues(limits: { concurrency: number; perEndpoint: number }): EndpointQueues {
  const queues = new Map<number, WebhookJob[]>();
  const inFlightPerEndpoint = new Map<number, number>();
  let queued = 0;
  let inFlight = 0;

  return {
    enqueue(job) {
      let queue = queues.get(job.endpointId);
      if (!queue) {
        queue = [];
        queues.set(job.endpointId, queue);
      }
      queue.push(job);
      queued += 1;
    },
    startWithinLimits(start) {
      for (const [endpointId, queue] of queues) {
        while (queue.length > 0 && inFlight < limits.concurrency && (inFlightPerEndpoint.get(endpointId) ?? 0) < limits.perEndpoint) {
          const job = queue.shift()!;
          queued -= 1;
          if (!start(job)) continue;
          inFlight += 1;
          inFlightPerEndpoint.set(endpointId, (inFlightPerEndpoint.get(endpointId) ?? 0) + 1);
        }
        if (queue.length === 0) queues.delete(endpointId);
        if (inFlight >= limits.concurrency) return;
      }
    },
    finished(job) {
      inFlight -= 1;
      const left = (inFlightPerEndpoint.get(job.endpointId) ?? 1) - 1;
      if (left <= 0) inFlightPerEndpoint.delete(job.endpointId);
      else inFlightPerEndpoint.set(job.endpointId, left);
    },
    get queued() {
      return queued;
    },
    get inFlight() {
      return inFlight;
    },
    clear() {
      queues.clear();
      queued = 0;
    },
  };
}
