/**
 * The SMTP servers main.ts starts: the submission listener (SMTP_PORT; off at 0), the same accept path as
 * POST /api/v1/mail keyed by an API key as the AUTH password, and the bounce listener an MX for BOUNCE_DOMAIN points
 * at (BOUNCE_SMTP_PORT; BOUNCES=off leaves it to other instances; docs/bounces.md). Neither knows the store: each is
 * handed the services' callbacks here.
 */
import fs from 'node:fs';
import type { AppServices } from '../app.js';
import { startBounceListener, type BounceListener } from '../bounces/bounce-listener.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { smtpRefusalFor } from '../intake/accept-errors.js';
import { startSmtpListener, type SmtpListener } from '../intake/smtp-listener.js';
import type { Logger } from '../logger.js';

export interface SmtpListeners {
  smtpListener: SmtpListener | undefined;
  bounceListener: BounceListener | undefined;
}

export async function startSmtpListeners(
  config: Config,
  parts: { clock: Clock; services: AppServices; logger: Logger },
): Promise<SmtpListeners> {
  const { clock, services, logger: log } = parts;
  let smtpListener: SmtpListener | undefined;
  if (config.smtpPort !== 0) {
    const tls =
      config.smtpTlsKeyFile && config.smtpTlsCertFile
        ? { key: fs.readFileSync(config.smtpTlsKeyFile), cert: fs.readFileSync(config.smtpTlsCertFile) }
        : undefined;
    smtpListener = await startSmtpListener({
      host: config.smtpHost,
      port: config.smtpPort,
      maxMessageBytes: config.smtpMaxMessageBytes,
      maxConnections: config.smtpMaxConnections,
      maxConnectionsPerClient: config.smtpMaxConnectionsPerClient,
      noProgressMs: config.smtpNoProgressMs,
      now: () => clock.now(),
      ...(tls ? { tls } : {}),
      logger: log,
      authenticate: (apiKey) => services.auth.findApiKeyPrincipal(apiKey),
      async accept(submission) {
        try {
          const mail = await services.submissions.submitRaw(submission.principal, submission);
          return { id: mail.id };
        } catch (error) {
          // A message refused or unstorable as it is fails permanently (554), a full store answers 452;
          // anything else stays a 451.
          const refusal = smtpRefusalFor(error);
          if (refusal) throw Object.assign(new Error(refusal.message), { smtpCode: refusal.smtpCode });
          throw error;
        }
      },
    });
  }

  let bounceListener: BounceListener | undefined;
  const bounceReturnPaths = config.bounces && config.bounceSmtpPort !== 0 ? await services.bounces.returnPaths() : undefined;
  if (bounceReturnPaths) {
    bounceListener = await startBounceListener({
      host: config.bounceSmtpHost,
      port: config.bounceSmtpPort,
      maxConnections: config.smtpMaxConnections,
      maxConnectionsPerClient: config.smtpMaxConnectionsPerClient,
      noProgressMs: config.smtpNoProgressMs,
      now: () => clock.now(),
      logger: log,
      isReturnPath: (address) => bounceReturnPaths.parse(address) !== undefined,
      receive: (report) => services.bounces.receiveReport(report),
      hasRoom: () => services.bounces.hasRoom(),
    });
  }

  return { smtpListener, bounceListener };
}
