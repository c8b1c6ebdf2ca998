/** BOUNCE_UNMATCHED_KEEP (docs/bounces.md#limits): its default, and a refusal that names it. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { configProblems } from '../support/config-problems.js';

const DATA_DIR = '/tmp/outbox-config-bounce-limits';

describe('BOUNCE_UNMATCHED_KEEP', () => {
  it('keeps 1,000 unmatched reports by default, takes 10–100,000, and refuses anything else by name', () => {
    expect(loadConfig({ DATA_DIR }).bounceUnmatchedKeep).toBe(1_000);
    expect(loadConfig({ DATA_DIR, BOUNCE_UNMATCHED_KEEP: '50000' }).bounceUnmatchedKeep).toBe(50_000);
    for (const value of ['9', '100001', 'many']) {
      expect(configProblems({ DATA_DIR, BOUNCE_UNMATCHED_KEEP: value })).toEqual([
        `BOUNCE_UNMATCHED_KEEP must be a whole number from 10 to 100000, got "${value}"`,
      ]);
    }
  });
});
