/**
 * What a module logs through. main.ts passes the app's pino logger (Fastify's `app.log`) to every module; tests
 * pass a plain object that keeps what it is given. A module that uses fewer levels asks for fewer, with
 * `Pick<Logger, 'warn'>`, so a test hands it only those.
 */
export interface Logger {
  info(object: object, message?: string): void;
  warn(object: object, message?: string): void;
  error(object: object, message?: string): void;
}
