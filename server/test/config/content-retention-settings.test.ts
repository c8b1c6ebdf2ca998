/** CONTENT_RETENTION_DAYS: its default (RETENTION_DAYS), 0, and refusals that name the variable. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { configProblems } from '../support/config-problems.js';

const DATA_DIR = '/tmp/outbox-config-content-retention';

const problemsOf = (env: Record<string, string>): string[] => configProblems({ DATA_DIR, ...env });

describe('content retention settings', () => {
  it('keeps content as long as the record by default, and takes 0 (removed once final) up to RETENTION_DAYS', () => {
    expect(loadConfig({ DATA_DIR }).contentRetentionDays).toBe(30);
    expect(loadConfig({ DATA_DIR, RETENTION_DAYS: '90' }).contentRetentionDays).toBe(90);
    expect(loadConfig({ DATA_DIR, CONTENT_RETENTION_DAYS: '0' }).contentRetentionDays).toBe(0);
    expect(loadConfig({ DATA_DIR, CONTENT_RETENTION_DAYS: '7', RETENTION_DAYS: '7' }).contentRetentionDays).toBe(7);
  });

  it('refuses what is not a whole number of days, and more than RETENTION_DAYS, with the other bad variables', () => {
    expect(problemsOf({ CONTENT_RETENTION_DAYS: 'week' })).toEqual([
      'CONTENT_RETENTION_DAYS must be a whole number from 0 to 36500, got "week"',
    ]);
    expect(problemsOf({ CONTENT_RETENTION_DAYS: '-1' })).toEqual([
      'CONTENT_RETENTION_DAYS must be a whole number from 0 to 36500, got "-1"',
    ]);
    expect(problemsOf({ CONTENT_RETENTION_DAYS: '31', RETENTION_DAYS: '30', LEASE_SECONDS: 'x' })).toEqual([
      'LEASE_SECONDS must be a whole number from 1 to 86400, got "x"',
      'CONTENT_RETENTION_DAYS must be at most RETENTION_DAYS (30): a mail\'s content is deleted with its record at RETENTION_DAYS, got "31"',
    ]);
  });
});
