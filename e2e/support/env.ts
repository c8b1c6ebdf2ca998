/** What a test knows of its worker's server (support/fixtures.ts: `env`). */
export interface SuiteEnv {
  baseURL: string;
  username: string;
  password: string;
  /** For submitting mails through POST /api/v1/mail. */
  apiKey: string;
  /** The server's SMTP submission port (AUTH PLAIN with apiKey as the password). */
  smtpPort: number;
}
