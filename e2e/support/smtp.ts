/**
 * A few lines of SMTP over a socket, for mails the JSON submission cannot carry (attachments): EHLO, AUTH PLAIN
 * with the suite's API key, one message. Returns the id the server answered with ("250 … queued as N").
 * `sendOverSmtp` below is the same dialogue without AUTH, for the bounce listener.
 */
import net from 'node:net';

export async function submitOverSmtp(
  port: number,
  apiKey: string,
  envelope: { from: string; to: string[] },
  message: string,
): Promise<number> {
  const queued = await sendOverSmtp(port, apiKey, envelope, message);
  const id = /queued as (\d+)/.exec(queued)?.[1];
  if (!id) throw new Error(`SMTP: no id in ${queued}`);
  return Number(id);
}

/**
 * One message over SMTP: EHLO, AUTH PLAIN with `apiKey` when one is given (the bounce listener takes none), the
 * envelope, DATA, QUIT. Returns the server's answer to the message (its 250 line).
 */
export async function sendOverSmtp(
  port: number,
  apiKey: string | null,
  envelope: { from: string; to: string[] },
  message: string,
): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setEncoding('utf8');
  let buffered = '';
  const waiters: Array<(reply: string) => void> = [];
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    // A complete reply ends with a line whose code is followed by a space.
    let match: RegExpExecArray | null;
    while ((match = /(?:^|\r\n)(\d{3}) [^\r\n]*\r\n/.exec(buffered))) {
      const reply = buffered.slice(0, match.index + match[0].length);
      buffered = buffered.slice(reply.length);
      waiters.shift()?.(reply.trim());
    }
  });
  const reply = () => new Promise<string>((resolve) => waiters.push(resolve));
  const expectCode = async (pending: Promise<string>, code: string) => {
    const text = await pending;
    if (!text.split('\r\n').at(-1)!.startsWith(code)) throw new Error(`SMTP: expected ${code}, got ${text}`);
    return text;
  };
  const command = (line: string, code: string) => {
    const pending = reply();
    socket.write(`${line}\r\n`);
    return expectCode(pending, code);
  };
  try {
    await expectCode(reply(), '220');
    await command('EHLO e2e.test', '250');
    if (apiKey !== null) await command(`AUTH PLAIN ${Buffer.from(`\0e2e\0${apiKey}`).toString('base64')}`, '235');
    await command(`MAIL FROM:<${envelope.from}>`, '250');
    for (const to of envelope.to) await command(`RCPT TO:<${to}>`, '250');
    await command('DATA', '354');
    const body = message.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
    const queued = await command(`${body}\r\n.`, '250');
    await command('QUIT', '221');
    return queued;
  } finally {
    socket.destroy();
  }
}
