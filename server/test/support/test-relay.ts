/**
 * A real SMTP server on loopback standing in for the provider, whose answer to each message the test
 * decides: accept, defer (4xx) or reject (5xx). It keeps every accepted message with its envelope and bytes,
 * so tests can check what reached the provider and how many times.
 */
import { startSmtpPeer } from './smtp-peer.js';

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
  /** Decides each RCPT TO answer (`transaction` counts MAIL FROM commands from 0); by default every one is accepted. */
  rcptAnswer: (address: string, transaction: number) => RelayAnswer;
  /** MAIL FROM commands seen. */
  transactions: number;
  /** The envelope commands and the relay's answers, as the relay saw them (MAIL FROM, RCPT TO, DATA). */
  dialogue: string[];
  close(): Promise<void>;
}

/** `port`: where to listen (0, the default: any free port), e.g. to bring a relay back on the port it had. */
export async function startTestRelay(port = 0): Promise<TestRelay> {
  const relay: TestRelay = {
    url: '',
    port: 0,
    received: [],
    answer: () => ({ accept: true }),
    attempts: 0,
    delayMs: 0,
    rcptAnswer: () => ({ accept: true }),
    transactions: 0,
    dialogue: [],
    close: async () => undefined,
  };
  // A client killed mid-session (the crash test) resets its connection; that is not the relay's failure.
  const peer = await startSmtpPeer(
    {
      disabledCommands: ['STARTTLS', 'AUTH'],
      onMailFrom(address, _session, callback) {
        relay.transactions += 1;
        relay.dialogue.push(`C: MAIL FROM:<${address.address}>`, 'S: 250 Accepted');
        callback();
      },
      onRcptTo(address, _session, callback) {
        const answer = relay.rcptAnswer(address.address, relay.transactions - 1);
        relay.dialogue.push(`C: RCPT TO:<${address.address}>`);
        if ('accept' in answer) {
          relay.dialogue.push('S: 250 Accepted');
          callback();
        } else {
          relay.dialogue.push(`S: ${answer.code} ${answer.message}`);
          callback(Object.assign(new Error(answer.message), { responseCode: answer.code }));
        }
      },
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
            relay.dialogue.push(`C: DATA (${raw.length} bytes, Message-ID ${message.messageId ?? 'none'})`);
            if ('accept' in answer) {
              relay.received.push(message);
              relay.dialogue.push(`S: 250 OK test relay ${relay.received.length}`);
              callback(null, `OK test relay ${relay.received.length}`);
            } else {
              relay.dialogue.push(`S: ${answer.code} ${answer.message}`);
              callback(Object.assign(new Error(answer.message), { responseCode: answer.code }));
            }
          }, relay.delayMs);
        });
      },
    },
    port,
  );
  relay.port = peer.port;
  relay.url = peer.url;
  relay.close = peer.close;
  return relay;
}
