import { Type, type Static } from '@sinclair/typebox';

/**
 * `GET /api/v1/stats` (docs/api.md#statistics-get-apiv1stats): the hourly counters per application, kept 13 months
 * whatever RETENTION_DAYS says. The counters are written with the change they count, never counted over mails.
 */

/** The eight counters, in the order the answer lists them. */
export const STATISTICS_COUNTERS = ['accepted', 'sent', 'deferred', 'failed', 'bounced', 'complained', 'suppressed', 'dequeued'] as const;
export type StatisticsCounter = (typeof STATISTICS_COUNTERS)[number];

/**
 * Upper bounds (ms, inclusive) of the latency histogram's buckets, accepted → ProviderSent: roughly log-scale from
 * 100 ms to 3 days; a last bucket holds everything longer. Fixed: the store keeps one column per bucket
 * (migration 024), so changing them is a migration.
 */
export const LATENCY_BUCKET_BOUNDS_MS = [
  100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000,
  43_200_000, 86_400_000, 259_200_000,
] as const;
/** Buckets in all: one per bound and the one beyond the last. */
export const LATENCY_BUCKET_COUNT = LATENCY_BUCKET_BOUNDS_MS.length + 1;

/** A range may span at most this many days. */
export const STATISTICS_MAX_RANGE_DAYS = 400;

export const StatisticsQuery = Type.Object(
  {
    from: Type.String({ format: 'date-time', description: 'Start of the range (ISO 8601), rounded down to its bucket' }),
    to: Type.String({ format: 'date-time', description: 'End of the range (ISO 8601, exclusive), rounded up to its bucket' }),
    bucket: Type.Optional(
      Type.Unsafe<'hour' | 'day'>({ type: 'string', enum: ['hour', 'day'], description: 'Bucket size (UTC); hour by default' }),
    ),
    application: Type.Optional(
      Type.String({
        pattern: '^(?:[1-9][0-9]{0,15}|none)$',
        description:
          "An application's (API key's) id, or `none` for mails no API key submitted (the console, the demo data). " +
          'Left out: every application (operators), or the calling API key.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type StatisticsQuery = Static<typeof StatisticsQuery>;

/**
 * A number or null, written as `type: ['number', 'null']` rather than a union (anyOf): the answer's serializer
 * (fast-json-stringify) writes such a type directly, where it checks each value of an anyOf against its branches,
 * and a 30-day hourly answer holds 3,600 of them.
 */
const NumberOrNull = (description: string) => Type.Unsafe<number | null>({ type: ['number', 'null'], description });
const Rate = (description: string) => NumberOrNull(description);

export const StatisticsRates = Type.Object({
  bounce: Rate('(bounced + complained) / sent; null when nothing was sent. The bounce_rate alert rule computes it so'),
  complaint: Rate('complained / sent; null when nothing was sent'),
  failure: Rate('failed / (failed + sent); null when neither happened. The failure_rate alert rule computes it so'),
});
export type StatisticsRates = Static<typeof StatisticsRates>;

export const StatisticsLatency = Type.Object({
  count: Type.Integer({ description: 'Mails sent (ProviderSent) in the bucket, whose latency is measured' }),
  p50Ms: NumberOrNull('Median accepted → ProviderSent latency (ms), read from the histogram (linear within a bucket); null: none sent'),
  p95Ms: NumberOrNull('95th percentile, read the same way; null: none sent'),
});
export type StatisticsLatency = Static<typeof StatisticsLatency>;

const counterFields = {
  accepted: Type.Integer({
    description: 'Mails accepted (stored by a submission; mail.queued, or Error at once when every recipient is suppressed)',
  }),
  sent: Type.Integer({ description: 'mail.sent events: mails that became ProviderSent' }),
  deferred: Type.Integer({ description: 'mail.deferred events: attempts put back to wait (one mail may count several times)' }),
  failed: Type.Integer({ description: 'mail.failed events: mails that became ProviderError or Error after an attempt' }),
  bounced: Type.Integer({ description: 'mail.bounced events: hard-bounce reports that changed a recipient' }),
  complained: Type.Integer({ description: 'mail.complained events: complaint reports that changed a recipient' }),
  suppressed: Type.Integer({ description: 'mail.suppressed events: mails with recipients not sent to because they are suppressed' }),
  dequeued: Type.Integer({ description: 'mail.dequeued events: mails an operator took out of the queue' }),
};

export const StatisticsBucket = Type.Object({
  start: Type.String({ format: 'date-time', description: 'Start of the bucket (UTC)' }),
  ...counterFields,
  latency: StatisticsLatency,
  rates: StatisticsRates,
});
export type StatisticsBucket = Static<typeof StatisticsBucket>;

export const StatisticsTotals = Type.Object({
  ...counterFields,
  latency: StatisticsLatency,
  rates: StatisticsRates,
  latencyHistogram: Type.Array(
    Type.Object({
      upToMs: Type.Union([Type.Integer(), Type.Null()], {
        description: 'Upper bound of the bucket (inclusive); null: beyond the last bound',
      }),
      count: Type.Integer(),
    }),
    { description: 'The latency histogram of the whole range, every bucket in order' },
  ),
});
export type StatisticsTotals = Static<typeof StatisticsTotals>;

export const Statistics = Type.Object({
  from: Type.String({ format: 'date-time', description: 'The range as answered: from rounded down to its bucket' }),
  to: Type.String({ format: 'date-time', description: 'The end as answered (exclusive): to rounded up to its bucket' }),
  bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
  application: Type.Union(
    [
      Type.Object({
        id: Type.Union([Type.Integer(), Type.Null()], { description: 'The API key id; null for mails no API key submitted' }),
        name: Type.Union([Type.String(), Type.Null()], { description: "The API key's name; null when none (or it is gone)" }),
      }),
      Type.Null(),
    ],
    { description: 'Whose mails are counted; null: every application' },
  ),
  buckets: Type.Array(StatisticsBucket, { description: 'Every bucket of the range, oldest first, empty ones included' }),
  totals: StatisticsTotals,
});
export type Statistics = Static<typeof Statistics>;

export const StatisticsResponse = Type.Object({ data: Type.Array(Statistics) });
export type StatisticsResponse = Static<typeof StatisticsResponse>;

/** `GET /api/v1/stats/applications` (operators): each application's totals over a range, in one answer. */
export const ApplicationStatisticsQuery = Type.Object(
  {
    from: Type.String({ format: 'date-time', description: 'Start of the range (ISO 8601), rounded down to its hour' }),
    to: Type.String({ format: 'date-time', description: 'End of the range (ISO 8601, exclusive), rounded up to its hour' }),
  },
  { additionalProperties: false },
);
export type ApplicationStatisticsQuery = Static<typeof ApplicationStatisticsQuery>;

export const ApplicationStatistics = Type.Object({
  application: Type.Object({
    id: Type.Union([Type.Integer(), Type.Null()], { description: 'The API key id; null for mails no API key submitted' }),
    name: Type.Union([Type.String(), Type.Null()], { description: "The API key's name; null when none (or it is gone)" }),
  }),
  totals: StatisticsTotals,
});
export type ApplicationStatistics = Static<typeof ApplicationStatistics>;

export const ApplicationStatisticsResponse = Type.Object({
  data: Type.Array(ApplicationStatistics, {
    description: 'One item per application that counted anything in the range (most accepted first); none for the others',
  }),
  meta: Type.Object({
    from: Type.String({ format: 'date-time', description: 'The range as answered: from rounded down to its hour' }),
    to: Type.String({ format: 'date-time', description: 'The end as answered (exclusive): to rounded up to its hour' }),
  }),
});
export type ApplicationStatisticsResponse = Static<typeof ApplicationStatisticsResponse>;
