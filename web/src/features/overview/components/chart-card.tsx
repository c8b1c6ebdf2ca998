import { useId, useState, type CSSProperties, type ReactNode } from 'react';
import { Button } from '../../../components/ui/button';
import { TimeChart, type ChartSeries } from './time-chart';

interface ChartCardProps {
  title: string;
  /** One sentence under the title: what is drawn, thresholds included. */
  description: ReactNode;
  times: number[];
  /** How a bucket's start is written in the table. */
  formatTime: (ms: number) => string;
  timeHeader: string;
  series: ChartSeries[];
  /** Axis and table values. */
  formatValue: (value: number) => string;
  /** As TimeChart's. */
  minTop?: number;
  integer?: boolean;
  onDrawn?: () => void;
}

/**
 * One chart of the Overview with its table alternative: "View as table" shows the same numbers
 * in a <table> instead of the canvas (a threshold is said in the description, not repeated on every row).
 */
export function ChartCard({
  title,
  description,
  times,
  formatTime,
  timeHeader,
  series,
  formatValue,
  minTop,
  integer,
  onDrawn,
}: ChartCardProps) {
  const [asTable, setAsTable] = useState(false);
  const headingId = useId();
  const columns = series.filter((s) => !s.dashed);
  return (
    <section className="overview-card" aria-labelledby={headingId}>
      <div className="overview-card__head">
        <h3 id={headingId} className="overview-card__title">
          {title}
        </h3>
        <Button size="small" variant="ghost" aria-pressed={asTable} onClick={() => setAsTable((shown) => !shown)}>
          View as table
        </Button>
      </div>
      <p className="overview-card__description muted">{description}</p>
      <ul className="overview-legend" aria-label={`${title}: legend`}>
        {series.map((s) => (
          <li key={s.label}>
            <span
              className={`overview-legend__swatch${s.dashed ? ' overview-legend__swatch--dashed' : ''}`}
              style={{ '--swatch': `var(${s.color})` } as CSSProperties}
              aria-hidden="true"
            />
            {s.label}
          </li>
        ))}
      </ul>
      {asTable ? (
        <div className="overview-card__table panel__scroll">
          <table className="panel__table">
            <caption>{title}</caption>
            <thead>
              <tr>
                <th scope="col">{timeHeader}</th>
                {columns.map((s) => (
                  <th key={s.label} scope="col" className="overview-number">
                    {s.label}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {times.map((time, i) => (
                <tr key={time}>
                  <th scope="row">{formatTime(time)}</th>
                  {columns.map((s) => {
                    const value = s.values[i];
                    return (
                      <td key={s.label} className="overview-number">
                        {value === null || value === undefined ? '—' : formatValue(value)}
                      </td>
                    );
                  })}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <TimeChart
          label={`${title} chart; View as table shows its numbers`}
          times={times}
          series={series}
          formatValue={formatValue}
          minTop={minTop}
          integer={integer}
          onDrawn={onDrawn}
        />
      )}
    </section>
  );
}
