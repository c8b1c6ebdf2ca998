import './overview.css';
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { Statistics } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { errorText } from '../../../lib/api-client';
import { applicationsQuery, fetchPerApplication, overviewKeys, statisticsQuery, thresholdsQuery } from '../api/overview-api';
import { ApplicationsTable, applicationRowsOf } from './applications-table';
import { ChartCard } from './chart-card';
import { formatBucket, formatCount, formatDuration, formatPercent } from './format';
import { DEFAULT_RANGE, localDay, RANGE_CHOICES, rangeOf, type RangeChoice, type StatsRange } from './ranges';
import type { ChartSeries } from './time-chart';

/** The outcomes stacked in the volume chart, bottom to top, each with its colour (overview.css). */
const OUTCOMES = [
  ['sent', 'Sent'],
  ['deferred', 'Deferred'],
  ['failed', 'Failed'],
  ['bounced', 'Bounced'],
  ['complained', 'Complained'],
  ['suppressed', 'Suppressed'],
  ['dequeued', 'Dequeued'],
] as const;

export interface OverviewPanelProps {
  token: string;
  onClose: () => void;
  /** An application's name was chosen: the mails list filtered to it. */
  onOpenApplication: (application: { id: number; name: string }) => void;
  /** The current time (tests). */
  now?: () => number;
}

/** Marks the first chart drawn after the Overview opened (the goal: ≤ 300 ms; e2e/specs/overview.spec.ts reads it). */
export const FIRST_CHART_MARK = 'outbox:overview-first-chart';

const ratioAxis = (value: number) => formatPercent(value);
const countAxis = (value: number) => formatCount(Math.round(value));

/**
 * The Overview (docs/console.md §10.21): sending volume stacked by outcome, latency p50/p95,
 * bounce and complaint rates with the alert threshold, over 24 h / 7 d / 30 d or custom days; each chart with a
 * table alternative; and every application's figures, sortable, each opening the mails list filtered to it.
 * Loaded on demand with its chart library (overview-button.tsx), so the list view's script does not carry it.
 */
export function OverviewPanel({ token, onClose, onOpenApplication, now = Date.now }: OverviewPanelProps) {
  const [choice, setChoice] = useState<RangeChoice>(DEFAULT_RANGE);
  const [custom, setCustom] = useState(() => ({ from: localDay(now() - 6 * 86_400_000), to: localDay(now()) }));
  // The fixed ranges are taken at the moment they are chosen, so the query key stays put while it is shown.
  const [chosenAt, setChosenAt] = useState(now);
  const range = useMemo(() => rangeOf(choice, chosenAt, custom), [choice, chosenAt, custom]);
  const valid: StatsRange | null = 'error' in range ? null : range;
  // A fixed range ends with the bucket now is in; when that bucket ends the range moves on, so the figures the live
  // updates refresh keep counting into the last point.
  const rangeEnd = choice === 'custom' || valid === null ? null : Date.parse(valid.to);
  useEffect(() => {
    if (rangeEnd === null) return;
    const timer = setTimeout(() => setChosenAt(now()), Math.max(0, rangeEnd - now()) + 100);
    return () => clearTimeout(timer);
  }, [rangeEnd, now]);

  const statistics = useQuery({ ...statisticsQuery(token, valid ?? { from: '', to: '', bucket: 'hour' }), enabled: valid !== null });
  const thresholds = useQuery(thresholdsQuery(token));
  const applications = useQuery(applicationsQuery(token));
  const perApplication = useQuery({
    queryKey: overviewKeys.perApplication(valid ?? { from: '', to: '', bucket: 'day' }),
    queryFn: ({ signal }) => fetchPerApplication(token, valid!, signal),
    enabled: valid !== null,
  });

  const marked = useRef(false);
  const onFirstDrawn = useCallback(() => {
    if (marked.current) return;
    marked.current = true;
    performance.mark(FIRST_CHART_MARK);
  }, []);

  function choose(next: RangeChoice) {
    setChoice(next);
    setChosenAt(now());
  }

  // The range moves on to now (a new hour is a new key), and whatever is shown is asked for again.
  const queryClient = useQueryClient();
  function refresh() {
    setChosenAt(now());
    void queryClient.invalidateQueries({ queryKey: overviewKeys.all });
  }

  const stats = statistics.data;
  // What a screen reader hears: that the range the operator chose has loaded ("Over 24 hours (hourly) shown"), once.
  // The summary line follows the live refreshes (every 2 s while mail flows), which a live region would announce
  // each time; it stays a plain paragraph, read where it stands.
  const rangeKey = valid ? `${valid.from} ${valid.to} ${valid.bucket}` : '';
  const [announced, setAnnounced] = useState<{ rangeKey: string; text: string }>({ rangeKey: '', text: '' });
  // Set while rendering (React's pattern for state that follows a prop), so the announcement is in the same commit.
  if (stats && announced.rangeKey !== rangeKey) setAnnounced({ rangeKey, text: `${summaryOf(stats).split(':')[0]} shown` });
  return (
    <ModalDialog title="Overview" onClose={onClose} placement="side" className="overview">
      <div className="overview__toolbar">
        <div className="chips" role="group" aria-label="Range">
          {RANGE_CHOICES.map((option) => (
            <button
              key={option.value}
              type="button"
              className="chip"
              aria-pressed={choice === option.value}
              onClick={() => choose(option.value)}
              data-autofocus={option.value === choice ? true : undefined}
            >
              {option.label}
            </button>
          ))}
        </div>
        {choice === 'custom' ? (
          <div className="overview__custom">
            <label className="filters__date">
              <span>From</span>
              <input type="date" value={custom.from} max={custom.to} onChange={(e) => setCustom((c) => ({ ...c, from: e.target.value }))} />
            </label>
            <label className="filters__date">
              <span>to</span>
              <input type="date" value={custom.to} min={custom.from} onChange={(e) => setCustom((c) => ({ ...c, to: e.target.value }))} />
            </label>
          </div>
        ) : null}
        <Button size="small" variant="ghost" onClick={refresh}>
          Refresh
        </Button>
      </div>
      {'error' in range ? (
        <p role="alert" className="overview__error">
          {range.error}
        </p>
      ) : null}
      {statistics.isError ? (
        <p role="alert" className="overview__error">
          {errorText(statistics.error, 'The statistics could not be loaded; try again.')}
        </p>
      ) : null}
      <p className="overview__summary">{stats ? summaryOf(stats) : valid && statistics.isFetching ? 'Loading…' : ''}</p>
      <p className="visually-hidden" aria-live="polite">
        {announced.text}
      </p>
      {stats ? <Charts stats={stats} bounceThreshold={thresholds.data?.bounce ?? null} onFirstDrawn={onFirstDrawn} /> : null}
      <section className="overview-card" aria-labelledby="overview-applications-title">
        <h3 id="overview-applications-title" className="overview-card__title">
          Applications
        </h3>
        {applications.isError ? (
          <p role="alert" className="overview__error">
            {errorText(applications.error, 'The applications could not be loaded; try again.')}
          </p>
        ) : null}
        <ApplicationsTable rows={applicationRowsOf(applications.data ?? [], perApplication.data)} onOpen={onOpenApplication} />
      </section>
    </ModalDialog>
  );
}

function summaryOf(stats: Statistics): string {
  const { totals } = stats;
  const days = (Date.parse(stats.to) - Date.parse(stats.from)) / 86_400_000;
  const span = days < 2 ? `${Math.round(days * 24)} hours` : `${Math.round(days)} days`;
  return (
    `Over ${span} (${stats.bucket === 'hour' ? 'hourly' : 'daily, UTC days'}): ${formatCount(totals.accepted)} accepted, ` +
    `${formatCount(totals.sent)} sent, ${formatCount(totals.failed)} failed, ${formatCount(totals.bounced)} bounced, ` +
    `${formatCount(totals.complained)} complained; failure ${formatPercent(totals.rates.failure)}, ` +
    `bounce ${formatPercent(totals.rates.bounce)}, complaint ${formatPercent(totals.rates.complaint)}.`
  );
}

function Charts({ stats, bounceThreshold, onFirstDrawn }: { stats: Statistics; bounceThreshold: number | null; onFirstDrawn: () => void }) {
  const times = useMemo(() => stats.buckets.map((b) => Date.parse(b.start)), [stats]);
  const formatTime = useMemo(() => formatBucket(stats.bucket), [stats.bucket]);
  const timeHeader = stats.bucket === 'hour' ? 'Hour' : 'Day (UTC)';
  const volume = useMemo<ChartSeries[]>(
    () => [
      ...OUTCOMES.map(([key, label]) => ({
        label,
        color: `--chart-${key}`,
        values: stats.buckets.map((b) => b[key]),
        stacked: true,
      })),
      { label: 'Accepted', color: '--chart-accepted', values: stats.buckets.map((b) => b.accepted) },
    ],
    [stats],
  );
  const latency = useMemo<ChartSeries[]>(
    () => [
      { label: 'p50', color: '--chart-p50', values: stats.buckets.map((b) => b.latency.p50Ms) },
      { label: 'p95', color: '--chart-p95', values: stats.buckets.map((b) => b.latency.p95Ms) },
    ],
    [stats],
  );
  const rates = useMemo<ChartSeries[]>(
    () => [
      { label: 'Bounce rate', color: '--chart-bounced', values: stats.buckets.map((b) => b.rates.bounce) },
      { label: 'Complaint rate', color: '--chart-complained', values: stats.buckets.map((b) => b.rates.complaint) },
      ...(bounceThreshold === null
        ? []
        : [
            {
              label: `Alert threshold ${formatPercent(bounceThreshold)}`,
              color: '--chart-threshold',
              values: stats.buckets.map(() => bounceThreshold),
              dashed: true,
            },
          ]),
    ],
    [stats, bounceThreshold],
  );
  return (
    <>
      <ChartCard
        title="Sending volume by outcome"
        description="Each bucket's outcomes stacked (a deferred mail counts each time it waits again); Accepted, the mails submitted, as a line."
        times={times}
        formatTime={formatTime}
        timeHeader={timeHeader}
        series={volume}
        formatValue={countAxis}
        minTop={5}
        integer
        onDrawn={onFirstDrawn}
      />
      <ChartCard
        title="Delivery latency"
        description="Accepted to sent, the median (p50) and the 95th percentile of the mails sent in each bucket."
        times={times}
        formatTime={formatTime}
        timeHeader={timeHeader}
        series={latency}
        formatValue={formatDuration}
        minTop={1000}
      />
      <ChartCard
        title="Bounce and complaint rates"
        description={
          bounceThreshold === null
            ? 'Bounces and complaints per mail sent (the bounce rate counts complaints too).'
            : `Bounces and complaints per mail sent (the bounce rate counts complaints too); dashed: the bounce_rate alert's threshold, ${formatPercent(bounceThreshold)}, which the same rate is held to over ALERT_WINDOW. Complaints have no rule of their own.`
        }
        times={times}
        formatTime={formatTime}
        timeHeader={timeHeader}
        series={rates}
        formatValue={ratioAxis}
        minTop={Math.max((bounceThreshold ?? 0) * 1.5, 0.01)}
      />
    </>
  );
}

export default OverviewPanel;
