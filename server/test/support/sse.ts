/**
 * A server-sent events reader for tests and benchmarks, reading `GET /api/v1/events` the way the console does:
 * fetch with the `Authorization: Token` header, the body parsed as it streams. Keeps every event and comment
 * with the time it arrived.
 */
export interface SseEvent {
  id: string | undefined;
  event: string;
  data: unknown;
  /** performance.now() when the event was complete. */
  at: number;
}

export interface SseStream {
  status: number;
  headers: Headers;
  events: SseEvent[];
  comments: string[];
  /** Resolves when the server ends the stream (or it breaks). */
  ended: Promise<void>;
  readonly isEnded: boolean;
  /** The first event after index `from` that matches, waiting up to `timeoutMs`. */
  next(predicate: (event: SseEvent) => boolean, options?: { from?: number; timeoutMs?: number }): Promise<SseEvent>;
  close(): void;
}

export async function openEvents(baseUrl: string, token: string, lastEventId?: string): Promise<SseStream> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/api/v1/events`, {
    headers: {
      authorization: `Token ${token}`,
      'content-type': 'application/json',
      accept: 'text/event-stream',
      ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}),
    },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let waiters: Array<() => void> = [];
  let isEnded = false;
  const wake = () => {
    const current = waiters;
    waiters = [];
    for (const w of current) w();
  };
  const ended = (async () => {
    if (!response.body || response.status !== 200) {
      await response.text().catch(() => '');
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    let id: string | undefined;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) events.push({ id, event, data: JSON.parse(data.join('\n')) as unknown, at: performance.now() });
          wake();
        }
      }
    } catch {
      // aborted or broken: ended
    } finally {
      isEnded = true;
      wake();
    }
  })();
  return {
    status: response.status,
    headers: response.headers,
    events,
    comments,
    ended,
    get isEnded() {
      return isEnded;
    },
    async next(predicate, { from = 0, timeoutMs = 10_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.slice(from).find(predicate);
        if (found) return found;
        if (isEnded) throw new Error(`The stream ended without the event awaited; got ${JSON.stringify(events.map((e) => e.event))}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`No matching event within ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => e.event))}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    close() {
      controller.abort();
    },
  };
}
