/**
 * The SMTP listener wired to a test context's submission service, as main.ts wires it, on a port chosen by
 * the OS, and a real nodemailer client that sends through it: for tests that need a mail that arrived over
 * SMTP (attachments, raw bytes kept as sent) and then look at it through the HTTP API.
 */
import nodemailer from 'nodemailer';
import { startSmtpListener } from '../../src/intake/smtp-listener.js';
import type { TestContext } from './context.js';

export type SmtpMail = nodemailer.SendMailOptions | { envelope: { from: string; to: string[] }; raw: string };

export interface SmtpIntake {
  /** The listener's port, for a raw client (smtp-session.ts). */
  port: number;
  /** The API key the client authenticates with (also usable as `Authorization: Token …`). */
  apiKey: string;
  /** Sends one mail and answers the id the listener's 250 names. */
  send(mail: SmtpMail): Promise<number>;
  close(): Promise<void>;
}

export async function startSmtpIntake(context: TestContext, keyName: string): Promise<SmtpIntake> {
  const apiKey = await context.services.auth.createApiKey(keyName);
  const listener = await startSmtpListener({
    port: 0,
    closeTimeoutMs: 1000,
    now: () => context.clock.now(),
    authenticate: (key) => context.services.auth.findApiKeyPrincipal(key),
    accept: async (submission) => ({ id: (await context.services.submissions.submitRaw(submission.principal, submission)).id }),
  });
  return {
    port: listener.port,
    apiKey,
    async send(mail) {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: listener.port,
        secure: false,
        ignoreTLS: true,
        auth: { user: 'app', pass: apiKey },
      });
      try {
        const info = await transport.sendMail(mail);
        const id = /queued as (\d+)/.exec(info.response)?.[1];
        if (!id) throw new Error(`no id in ${info.response}`);
        return Number(id);
      } finally {
        transport.close();
      }
    },
    close: () => listener.close(),
  };
}
