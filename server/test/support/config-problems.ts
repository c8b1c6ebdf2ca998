/** The configuration tests' one question: what does loadConfig refuse in these variables? */
import { ConfigError, loadConfig } from '../../src/config.js';

/** The problems loadConfig names for `env` (each naming its variable), or none when it takes them. */
export function configProblems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}
