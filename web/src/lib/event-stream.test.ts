import { describe, expect, it } from 'vitest';
import { createSseParser, type StreamEvent } from './event-stream';

describe('createSseParser', () => {
  it('reads events split anywhere across chunks, with LF, CRLF or CR line ends, ignoring comments', () => {
    const events: StreamEvent[] = [];
    let activity = 0;
    const feed = createSseParser(
      (e) => events.push(e),
      () => (activity += 1),
    );
    const text =
      'retry: 2000\n: connected\n\nid: a.1\nevent: counts\ndata: {"x":1}\n\r\nid: a.2\r\nevent: mail\r\ndata: [1,\rdata: 2]\r\r: keep-alive\n\ndata: plain\n\n';
    for (let i = 0; i < text.length; i += 3) feed(text.slice(i, i + 3));
    expect(events).toEqual([
      { event: 'counts', data: '{"x":1}', id: 'a.1' },
      { event: 'mail', data: '[1,\n2]', id: 'a.2' },
      { event: 'message', data: 'plain', id: 'a.2' },
    ]);
    expect(activity).toBeGreaterThan(10);
  });
});
