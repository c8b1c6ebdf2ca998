/**
 * A real SMTP server on loopback standing in for the provider, whose answer to each message the test
 * decides: accept, defer (4xx) or reject (5xx). It keeps every accepted message with its envelope and bytes,
 * so tests can check what reached the provider and how many times.
 */
import { SMTPServer } from 'smtp-server';

export interface RelayedMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  /** The Message-ID header as received. */
  messageId: string | undefined;
}

export type RelayAnswer = { accept: true } | { code: number; message: string };

export interface TestRelay {
  url: string;
  port: number;
  received: RelayedMessage[];
  /** Decides the DATA answer; by default every message is accepted. */
  answer: (message: RelayedMessage, index: number) => RelayAnswer;
  /** Messages that reached DATA, accepted or not. */
  attempts: number;
  /** Milliseconds the relay waits before answering DATA: a slow provider. */
  delayMs: number;
  close(): Promise<void>;
}

export async function startTestRelay(): Promise<TestRelay> {
  const relay: TestRelay = {
    url: '',
    port: 0,
    received: [],
    answer: () => ({ accept: true }),
    attempts: 0,
    delayMs: 0,
    close: async () => undefined,
  };
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.once('end', () => {
        const raw = Buffer.concat(chunks);
        const message: RelayedMessage = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          raw,
          messageId: /^message-id:\s*(.+)$/im.exec(raw.toString('latin1'))?.[1]?.trim(),
        };
        const answer = relay.answer(message, relay.attempts++);
        setTimeout(() => {
          if ('accept' in answer) {
            relay.received.push(message);
            callback(null, `OK test relay ${relay.received.length}`);
          } else {
            callback(Object.assign(new Error(answer.message), { responseCode: answer.code }));
          }
        }, relay.delayMs);
      });
    },
  });
  // A client killed mid-session (the crash test) resets its connection; that is not the relay's failure.
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.server.address();
  relay.port = typeof address === 'object' && address ? address.port : 0;
  relay.url = `smtp://127.0.0.1:${relay.port}`;
  relay.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return relay;
}
