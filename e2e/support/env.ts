/** How global-setup hands the running server to the tests (environment variables reach the workers). */
export const ENV_BASE_URL = 'OUTBOX_E2E_BASE_URL';
export const ENV_USERNAME = 'OUTBOX_E2E_USERNAME';
export const ENV_PASSWORD = 'OUTBOX_E2E_PASSWORD';
export const ENV_API_KEY = 'OUTBOX_E2E_API_KEY';
export const ENV_SMTP_PORT = 'OUTBOX_E2E_SMTP_PORT';

export interface SuiteEnv {
  baseURL: string;
  username: string;
  password: string;
  /** For submitting mails through POST /api/v1/mail. */
  apiKey: string;
  /** The server's SMTP submission port (AUTH PLAIN with apiKey as the password). */
  smtpPort: number;
}

export function suiteEnv(): SuiteEnv {
  const baseURL = process.env[ENV_BASE_URL];
  const username = process.env[ENV_USERNAME];
  const password = process.env[ENV_PASSWORD];
  if (!baseURL || !username || !password) {
    throw new Error('The e2e server is not running: run the suite with `--config e2e/playwright.config.ts` (its globalSetup starts it).');
  }
  return { baseURL, username, password, apiKey: process.env[ENV_API_KEY] ?? '', smtpPort: Number(process.env[ENV_SMTP_PORT] ?? 0) };
}
