/**
 * Starts one server for the whole run (the suite runs on one worker, in order) and hands its address and the
 * operator's credentials to the tests through environment variables, which Playwright passes on to workers.
 * The returned function is the global teardown: SIGTERM to the server, then the temporary DATA_DIR goes.
 */
import { ENV_API_KEY, ENV_BASE_URL, ENV_PASSWORD, ENV_SMTP_PORT, ENV_USERNAME } from './support/env';
import { startServer } from './support/server';

export default async function globalSetup(): Promise<() => Promise<void>> {
  const server = await startServer();
  process.env[ENV_BASE_URL] = server.baseURL;
  process.env[ENV_USERNAME] = server.username;
  process.env[ENV_PASSWORD] = server.password;
  process.env[ENV_API_KEY] = server.apiKey;
  process.env[ENV_SMTP_PORT] = String(server.smtpPort);
  return server.stop;
}
