/**
 * Server-sent events read with fetch streaming (docs/console.md: live updates). EventSource cannot send the
 * `Authorization: Token` header, and the token never goes into a URL, so the stream is an ordinary API call
 * (apiRequest: a 401 ends the session like any other call) whose body is parsed as it arrives.
 *
 * It reconnects by itself with backoff (1 s, 2 s, 4 s, 8 s, then every 10 s; jittered), sends `Last-Event-ID` so the server
 * can replay what was missed, and treats a stream silent for longer than `stallMs` (keep-alives come every
 * 15 s) as dropped. A server without the call (404, 405, 501: one that implements only the four calls of
 * docs/console.md §7) is not asked again.
 */
import { ApiError, apiRequest } from './api-client';

export interface StreamEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/** connecting: the first attempt; live: a stream is open; reconnecting: it dropped, another attempt is due; off: not available. */
export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'off';

export interface EventStreamOptions {
  path: string;
  token: string;
  onEvent: (event: StreamEvent) => void;
  onState: (state: StreamState) => void;
  stallMs?: number;
  /** The first retry's delay; each further one doubles, up to maxDelayMs. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Parses SSE text as it comes (lines end in CRLF, LF or CR). Returns the function to feed it chunks;
 * `onComment` is told of keep-alives and every other line too, so the caller knows the stream is alive.
 */
export function createSseParser(onEvent: (event: StreamEvent) => void, onActivity: () => void = () => undefined) {
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let lastId: string | undefined;
  function line(text: string): void {
    if (text === '') {
      if (data.length > 0) onEvent({ event: event || 'message', data: data.join('\n'), id: lastId });
      event = '';
      data = [];
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'id' && !value.includes('\0')) lastId = value;
  }
  return (chunk: string) => {
    onActivity();
    buffer += chunk;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(buffer);
      if (!match) break;
      // A CR at the very end may be the first half of a CRLF split across chunks: wait for more.
      if (match[0] === '\r' && match.index === buffer.length - 1) break;
      line(buffer.slice(0, match.index));
      buffer = buffer.slice(match.index + match[0].length);
    }
  };
}

/** Opens the stream and keeps it open until the returned function is called. */
export function openEventStream(options: EventStreamOptions): () => void {
  const stallMs = options.stallMs ?? 45_000;
  const baseDelayMs = options.baseDelayMs ?? 1000;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  let stopped = false;
  let failures = 0;
  let lastEventId: string | undefined;
  let controller: AbortController | undefined;
  let retryTimer: number | undefined;
  let lastActivity = Date.now();

  const setState = (state: StreamState) => {
    if (!stopped) options.onState(state);
  };

  async function connect(): Promise<void> {
    controller = new AbortController();
    const signal = controller.signal;
    try {
      const response = await apiRequest(options.path, {
        token: options.token,
        signal,
        headers: { Accept: 'text/event-stream', ...(lastEventId !== undefined ? { 'Last-Event-ID': lastEventId } : {}) },
      });
      if (!response.body) throw new Error('The event stream has no body');
      setState('live');
      lastActivity = Date.now();
      const parse = createSseParser(
        (event) => {
          if (event.id !== undefined) lastEventId = event.id;
          failures = 0; // a stream that delivers is healthy: the next drop retries soon
          options.onEvent(event);
        },
        () => {
          lastActivity = Date.now();
        },
      );
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done || stopped) break;
        parse(decoder.decode(value, { stream: true }));
      }
    } catch (error) {
      if (stopped) return;
      if (error instanceof ApiError && [401, 404, 405, 501].includes(error.status)) {
        // 401: apiRequest has ended the session already. The others: this server has no live updates.
        stopped = true;
        options.onState('off');
        return;
      }
    }
    if (stopped) return;
    failures += 1;
    setState('reconnecting');
    const delay = Math.min(maxDelayMs, baseDelayMs * 2 ** (failures - 1));
    retryTimer = window.setTimeout(() => void connect(), delay * (0.75 + Math.random() * 0.25));
  }

  setState('connecting');
  void connect();
  // A stream that went silent (a proxy or network that drops without closing): abort it, which reconnects.
  const stallTimer = window.setInterval(
    () => {
      if (Date.now() - lastActivity > stallMs) {
        lastActivity = Date.now();
        controller?.abort();
      }
    },
    Math.min(5000, stallMs / 2),
  );

  return () => {
    stopped = true;
    window.clearTimeout(retryTimer);
    window.clearInterval(stallTimer);
    controller?.abort();
  };
}
