/**
 * An SMTP submission client that pipelines as real MTAs do (RFC 2920), over a bare `net.Socket`: after EHLO
 * and AUTH PLAIN, `MAIL FROM`, `RCPT TO` and `DATA` go out in one write; once the 354 is in, the message, its
 * end-of-data dot and the next message's `MAIL FROM`, `RCPT TO` and `DATA` go out in one write too, so a
 * session waits for one round of replies per message. The last message is followed by `QUIT`.
 *
 * Every reply is checked against the one its command must get, in order (250 for MAIL and each RCPT, 354
 * for DATA, `250 … queued as N` for the message, 221 for QUIT). The first unexpected reply fails the
 * session with the command and the reply, and a message only counts once its `queued as N` is read, so a
 * fast figure cannot come from replies that were never checked.
 */
import net from 'node:net';
import { benchRawMessage } from './mails.js';

export interface PipelineLoadSpec {
  host: string;
  port: number;
  apiKey: string;
  connections: number;
  count: number;
  firstIndex: number;
  /** Stop taking new messages after this long. */
  maxDurationMs: number;
}

export interface PipelineLoadResult {
  sent: number;
  failed: number;
  elapsedMs: number;
  latenciesMs: number[];
  /** The id of every `250 … queued as N`, to check that no mail was answered twice. */
  ids: number[];
  firstError?: string;
}

interface Reply {
  code: number;
  text: string;
}

/** Every wait has a deadline: a server that stops answering fails the session instead of hanging the run. */
const REPLY_TIMEOUT_MS = 30_000;

/** Splits what the server writes into replies (the last line of a reply has a space after its code). */
class ReplyReader {
  private buffered = '';
  private lines: string[] = [];
  private readonly replies: Reply[] = [];
  private waiting: { resolve: (reply: Reply) => void; reject: (error: Error) => void } | undefined;
  private failure: Error | undefined;

  constructor(socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.take(chunk));
    socket.on('error', (error) => this.fail(error));
    socket.on('close', () => this.fail(new Error('the server closed the connection')));
  }

  private take(chunk: string): void {
    this.buffered += chunk;
    for (let end = this.buffered.indexOf('\r\n'); end !== -1; end = this.buffered.indexOf('\r\n')) {
      const line = this.buffered.slice(0, end);
      this.buffered = this.buffered.slice(end + 2);
      this.lines.push(line);
      if (line[3] === '-') continue;
      const reply = { code: Number(line.slice(0, 3)), text: this.lines.join('\n') };
      this.lines = [];
      if (this.waiting) {
        const { resolve } = this.waiting;
        this.waiting = undefined;
        resolve(reply);
      } else this.replies.push(reply);
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    if (this.waiting) {
      const { reject } = this.waiting;
      this.waiting = undefined;
      reject(error);
    }
  }

  next(): Promise<Reply> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error(`no reply within ${REPLY_TIMEOUT_MS} ms`)), REPLY_TIMEOUT_MS);
      this.waiting = {
        resolve: (reply) => (clearTimeout(timer), resolve(reply)),
        reject: (error) => (clearTimeout(timer), reject(error)),
      };
    });
  }

  /** The next reply, which must have this code (and its text match `pattern`) after `command`. */
  async expect(command: string, code: number, pattern?: RegExp): Promise<Reply> {
    const reply = await this.next();
    if (reply.code !== code || (pattern && !pattern.test(reply.text))) {
      throw new Error(`${command}: expected ${code}${pattern ? ` ${pattern}` : ''}, got "${reply.text}"`);
    }
    return reply;
  }
}

interface Message {
  from: string;
  to: string[];
  /** CRLF lines, dot-stuffed, ending with CRLF and the end-of-data line. */
  data: string;
}

function messageOf(index: number): Message {
  const { envelope, raw } = benchRawMessage(index);
  const stuffed = raw.replace(/(^|\r\n)\./g, '$1..');
  return { from: envelope.from, to: envelope.to, data: `${stuffed}${stuffed.endsWith('\r\n') ? '' : '\r\n'}.\r\n` };
}

function envelopeCommands(message: Message): string {
  return `MAIL FROM:<${message.from}>\r\n${message.to.map((to) => `RCPT TO:<${to}>\r\n`).join('')}DATA\r\n`;
}

/** The replies to one envelopeCommands() write: MAIL, each RCPT, then 354 for DATA. */
async function expectEnvelopeReplies(replies: ReplyReader, message: Message): Promise<void> {
  await replies.expect('MAIL FROM', 250);
  for (const to of message.to) await replies.expect(`RCPT TO:<${to}>`, 250);
  await replies.expect('DATA', 354);
}

async function openSession(spec: PipelineLoadSpec): Promise<{ socket: net.Socket; replies: ReplyReader }> {
  const socket = net.connect({ host: spec.host, port: spec.port, noDelay: true });
  const replies = new ReplyReader(socket);
  await replies.expect('greeting', 220);
  socket.write('EHLO bench.example\r\n');
  await replies.expect('EHLO', 250, /^250[- ]PIPELINING$/m);
  socket.write(`AUTH PLAIN ${Buffer.from(`\0bench\0${spec.apiKey}`).toString('base64')}\r\n`);
  await replies.expect('AUTH PLAIN', 235);
  return { socket, replies };
}

export async function runPipelineLoad(spec: PipelineLoadSpec): Promise<PipelineLoadResult> {
  const result: PipelineLoadResult = { sent: 0, failed: 0, elapsedMs: 0, latenciesMs: [], ids: [] };
  let taken = 0;
  const started = performance.now();
  const deadline = started + spec.maxDurationMs;
  const take = (): Message | undefined =>
    taken < spec.count && performance.now() < deadline ? messageOf(spec.firstIndex + taken++) : undefined;

  async function session(): Promise<void> {
    let message = take();
    if (!message) return;
    const { socket, replies } = await openSession(spec);
    // Messages written but not answered when the session fails count as failed.
    let unanswered = 1;
    try {
      socket.write(envelopeCommands(message));
      await expectEnvelopeReplies(replies, message);
      for (;;) {
        const next = take();
        if (next) unanswered += 1;
        const written = performance.now();
        socket.write(message.data + (next ? envelopeCommands(next) : 'QUIT\r\n'));
        const queued = await replies.expect('end of DATA', 250, /queued as (\d+)/);
        unanswered -= 1;
        result.sent += 1;
        result.ids.push(Number(/queued as (\d+)/.exec(queued.text)![1]));
        result.latenciesMs.push(performance.now() - written);
        if (!next) {
          await replies.expect('QUIT', 221);
          return;
        }
        await expectEnvelopeReplies(replies, next);
        message = next;
      }
    } catch (error) {
      result.failed += unanswered;
      result.firstError ??= error instanceof Error ? error.message : String(error);
    } finally {
      socket.destroy();
    }
  }

  await Promise.all(Array.from({ length: spec.connections }, session));
  result.elapsedMs = performance.now() - started;
  return result;
}
