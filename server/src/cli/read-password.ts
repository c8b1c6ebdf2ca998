/** Reads a password from a prompt with the echo off, or from standard input (`--password-stdin`). */
import readline from 'node:readline';
import { Writable } from 'node:stream';

export async function readPasswordFromStdin(input: AsyncIterable<Buffer | string> = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

export async function promptPassword(question: string): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = readline.createInterface({ input: process.stdin, output, terminal: true });
  try {
    return await new Promise<string>((resolve) => {
      rl.question(question, (answer) => {
        process.stderr.write('\n');
        resolve(answer);
      });
      muted = true;
    });
  } finally {
    rl.close();
  }
}
