/**
 * The WEBHOOK_* variables, and IMAGE_PROXY_ALLOW_PRIVATE (the other switch of net/address-guard.ts), as the
 * configuration check reads them: defaults, valid values, every problem named.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { configProblems } from '../support/config-problems.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../src/webhooks/webhook-policy.js';

const base = { DATA_DIR: '/tmp/outbox-config-webhooks' };

const problemsOf = (env: Record<string, string>): string[] => configProblems({ ...base, ...env });

describe('webhook settings', () => {
  it('default to on, 10 s, the Svix schedule (the same list as webhook-policy.ts), private targets refused, 32 in flight', () => {
    const config = loadConfig(base);
    expect(config).toMatchObject({ webhooks: true, webhookTimeoutMs: 10_000, webhookAllowPrivate: false, webhookConcurrency: 32 });
    expect(config.webhookRetrySchedule).toEqual([...DEFAULT_RETRY_SCHEDULE_MS]);
  });

  it('read a shortened schedule, a timeout and the switches', () => {
    const config = loadConfig({
      ...base,
      WEBHOOKS: 'off',
      WEBHOOK_TIMEOUT: '2500ms',
      WEBHOOK_RETRY_SCHEDULE: '0, 1s,2s,500ms',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CONCURRENCY: '4',
    });
    expect(config).toMatchObject({ webhooks: false, webhookTimeoutMs: 2_500, webhookAllowPrivate: true, webhookConcurrency: 4 });
    expect(config.webhookRetrySchedule).toEqual([0, 1_000, 2_000, 500]);
  });

  it('name every bad value', () => {
    expect(
      problemsOf({
        WEBHOOKS: 'maybe',
        WEBHOOK_TIMEOUT: '10 minutes',
        WEBHOOK_RETRY_SCHEDULE: '0,soon,2s',
        WEBHOOK_ALLOW_PRIVATE: 'perhaps',
        WEBHOOK_CONCURRENCY: '0',
      }).sort(),
    ).toEqual(
      [
        'WEBHOOK_TIMEOUT must be a duration such as 30s, 250ms, 24h or 3600, got "10 minutes"',
        'WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of up to 50 durations such as 0,5s,5m,30m,2h, got "0,soon,2s"',
        'WEBHOOKS must be on or off, got "maybe"',
        'WEBHOOK_ALLOW_PRIVATE must be on or off, got "perhaps"',
        'WEBHOOK_CONCURRENCY must be a whole number from 1 to 1000, got "0"',
      ].sort(),
    );
    expect(problemsOf({ WEBHOOK_TIMEOUT: '5m' })).toEqual(['WEBHOOK_TIMEOUT must be at most 120s, got "5m"']);
  });
});

describe('the image proxy setting', () => {
  it('refuses private targets by default, apart from WEBHOOK_ALLOW_PRIVATE, and names a bad value', () => {
    expect(loadConfig(base).imageProxyAllowPrivate).toBe(false);
    expect(loadConfig({ ...base, WEBHOOK_ALLOW_PRIVATE: 'true' }).imageProxyAllowPrivate).toBe(false);
    expect(loadConfig({ ...base, IMAGE_PROXY_ALLOW_PRIVATE: 'true' })).toMatchObject({
      imageProxyAllowPrivate: true,
      webhookAllowPrivate: false,
    });
    expect(problemsOf({ IMAGE_PROXY_ALLOW_PRIVATE: 'sometimes' })).toEqual([
      'IMAGE_PROXY_ALLOW_PRIVATE must be on or off, got "sometimes"',
    ]);
  });
});
