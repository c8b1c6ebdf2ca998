/**
 * A raw SMTP client over a socket, line by line, for what a well-behaved client (nodemailer) would never send:
 * bare CR or LF, NUL, overlong or odd commands, pipelined bytes. Replies are read as they arrive (no polling):
 * a reply is complete at its line with a space (or nothing) after the code, its lines kept joined with '\n'.
 * Every wait has a deadline.
 */
import net from 'node:net';

export class SmtpSession {
  /** Every complete reply so far, in order, the greeting first. */
  readonly replies: string[] = [];
  /** What was said, for a failure message: `C: …` and `S: …` lines. */
  readonly transcript: string[] = [];
  private read = 0;
  private buffer = '';
  private lines: string[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private readonly closed: Promise<void>;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      let index: number;
      while ((index = this.buffer.indexOf('\n')) !== -1) {
        // CRLF from any sane server; a bare LF is taken as a line end too, so a fuzzed server's reply still counts.
        const line = this.buffer.slice(0, index).replace(/\r$/, '');
        this.buffer = this.buffer.slice(index + 1);
        this.lines.push(line);
        if (/^\d{3}(?: |$)/.test(line)) {
          const reply = this.lines.join('\n');
          this.replies.push(reply);
          this.transcript.push(`S: ${reply.slice(0, 200)}`);
          this.lines = [];
        }
      }
      this.wake?.();
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    const end = () => {
      this.ended = true;
      this.wake?.();
    };
    socket.on('close', end);
    socket.on('error', end);
  }

  /** Connects to a listener on loopback; the greeting is the first reply. */
  static open(port: number): Promise<SmtpSession> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.off('error', reject);
        resolve(new SmtpSession(socket));
      });
      socket.once('error', reject);
    });
  }

  /** True once the server closed the connection (or it failed). */
  get isClosed(): boolean {
    return this.ended;
  }

  /** The next reply not yet read, or undefined when the server closed first or `timeoutMs` passed. */
  async nextReply(timeoutMs = 5_000): Promise<string | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.read >= this.replies.length && !this.ended) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    return this.read < this.replies.length ? this.replies[this.read++] : undefined;
  }

  /** The next reply; throws, with the transcript, when none comes within `timeoutMs`. */
  async reply(timeoutMs = 5_000): Promise<string> {
    const reply = await this.nextReply(timeoutMs);
    if (reply === undefined)
      throw new Error(`No SMTP reply ${this.ended ? '(connection closed)' : `within ${timeoutMs} ms`}:\n${this.transcript.join('\n')}`);
    return reply;
  }

  /** Writes `line` and CRLF, then answers the reply to it. */
  async command(line: string, timeoutMs = 5_000): Promise<string> {
    this.transcript.push(`C: ${JSON.stringify(line.slice(0, 200))}`);
    this.write(`${line}\r\n`);
    return this.reply(timeoutMs);
  }

  /** Writes bytes as they are (a string as latin1: one char, one byte), e.g. message content with odd line ends. */
  write(bytes: string | Buffer): void {
    if (!this.ended) this.socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
  }

  /** Waits until the server closes the connection; false if it has not within `timeoutMs`. */
  async waitClosed(timeoutMs = 5_000): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const result = await Promise.race([this.closed.then(() => true), timedOut]);
    clearTimeout(timer);
    return result;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * Greeting, then each command and its reply; answers the replies, the greeting first. Throws when a reply
 * does not come within `timeoutMs` of its command.
 */
export async function smtpDialog(port: number, commands: string[], timeoutMs = 5_000): Promise<string[]> {
  const session = await SmtpSession.open(port);
  try {
    const replies = [await session.reply(timeoutMs)];
    for (const command of commands) replies.push(await session.command(command, timeoutMs));
    return replies;
  } finally {
    session.destroy();
  }
}

/**
 * Like smtpDialog, then writes `data` (message content and the end of DATA) in one go followed by QUIT, and
 * answers every reply up to the server's close (or `timeoutMs` after the data).
 */
export async function smtpSessionWithData(port: number, commands: string[], data: string | Buffer, timeoutMs = 5_000): Promise<string[]> {
  const session = await SmtpSession.open(port);
  try {
    await session.reply(timeoutMs);
    for (const command of commands) await session.command(command, timeoutMs);
    session.transcript.push(`C: <data> ${JSON.stringify(data.toString('latin1').slice(0, 200))}`);
    session.write(Buffer.concat([typeof data === 'string' ? Buffer.from(data, 'latin1') : data, Buffer.from('QUIT\r\n')]));
    await session.waitClosed(timeoutMs);
    return [...session.replies];
  } finally {
    session.destroy();
  }
}
