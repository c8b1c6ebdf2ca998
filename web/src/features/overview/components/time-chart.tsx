import 'uplot/dist/uPlot.min.css';
import { useEffect, useLayoutEffect, useRef, useState } from 'react';
import uPlot from 'uplot';

/** One line (or stacked area) of a chart; `color` names a CSS custom property of overview.css (light and dark). */
export interface ChartSeries {
  label: string;
  color: string;
  values: Array<number | null>;
  /** Part of the stack (areas, bottom to top in the order given); otherwise a line over it. */
  stacked?: boolean;
  /** A dashed line: an alert threshold. */
  dashed?: boolean;
}

export interface TimeChartProps {
  /** The chart's accessible name: what it shows (the numbers are in its table). */
  label: string;
  /** Bucket starts (ms). */
  times: number[];
  series: ChartSeries[];
  /** How the value axis writes a value. */
  formatValue: (value: number) => string;
  height?: number;
  /** The value axis reaches at least this (an empty chart still has a readable scale). */
  minTop?: number;
  /** Whole numbers only on the value axis (counts). */
  integer?: boolean;
  /** Called once the canvas holds the chart (each time it is drawn). */
  onDrawn?: () => void;
}

const DARK = '(prefers-color-scheme: dark)';
/** Tick steps of a count axis: 1, 2, 5, 10, 20, 50, … */
const WHOLE_STEPS = Array.from({ length: 10 }, (_, power) => [1, 2, 5].map((step) => step * 10 ** power)).flat();

/**
 * A time chart drawn by uPlot on a canvas (ARCHITECTURE.md: the Overview's charts). The canvas is one image to
 * assistive technology (role img, named by `label`); the chart card's table holds the numbers. Colours are read
 * from the stylesheet when it is drawn, and it is drawn again when the colour scheme changes or it is resized.
 */
export function TimeChart({ label, times, series, formatValue, height = 220, minTop = 1, integer = false, onDrawn }: TimeChartProps) {
  const ref = useRef<HTMLDivElement>(null);
  const [scheme, setScheme] = useState(0);
  const drawn = useRef(onDrawn);
  useLayoutEffect(() => {
    drawn.current = onDrawn;
  });

  useEffect(() => {
    const media = window.matchMedia?.(DARK);
    const change = () => setScheme((n) => n + 1);
    media?.addEventListener('change', change);
    return () => media?.removeEventListener('change', change);
  }, []);

  // Before the browser paints (a layout effect): the chart shows in the frame that shows its card, instead of
  // the card being laid out and painted empty first (~100–300 ms more on a busy two-core machine).
  useLayoutEffect(() => {
    const element = ref.current;
    if (!element) return;
    const style = getComputedStyle(element);
    const color = (name: string) => style.getPropertyValue(name).trim() || 'currentColor';
    // Stacked: each area is the sum of it and those below, drawn top first so the lower ones paint over it.
    const stack = series.filter((s) => s.stacked);
    const sums: Array<Array<number | null>> = [];
    stack.forEach((s, k) => sums.push(s.values.map((v, i) => (v ?? 0) + (k === 0 ? 0 : (sums[k - 1]![i] ?? 0)))));
    const lines = series.filter((s) => !s.stacked);
    const ordered = [...stack.map((s, k) => ({ s, values: sums[k]! })).reverse(), ...lines.map((s) => ({ s, values: s.values }))];
    const muted = color('--muted');
    const grid = { stroke: color('--border'), width: 1 };
    const axis = { stroke: muted, grid, ticks: grid, font: '12px system-ui, sans-serif' };
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 240),
      height,
      legend: { show: false },
      cursor: { show: false },
      select: { show: false, left: 0, top: 0, width: 0, height: 0 },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(max * 1.1, minTop)] } },
      axes: [
        axis,
        { ...axis, size: 64, values: (_u, values) => values.map((v) => formatValue(v)), ...(integer ? { incrs: WHOLE_STEPS } : {}) },
      ],
      series: [
        {},
        ...ordered.map(({ s }) => ({
          label: s.label,
          stroke: color(s.color),
          width: s.dashed ? 1.5 : s.stacked ? 1 : 2,
          ...(s.stacked ? { fill: color(s.color) } : {}),
          ...(s.dashed ? { dash: [6, 4] } : {}),
          points: { show: false },
        })),
      ],
      hooks: { draw: [() => drawn.current?.()] },
    };
    const data: uPlot.AlignedData = [times.map((t) => t / 1000), ...ordered.map(({ values }) => values)];
    const chart = new uPlot(options, data, element);
    const resize = new ResizeObserver(() => {
      const width = Math.max(element.clientWidth, 240);
      if (width !== chart.width) chart.setSize({ width, height });
    });
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [times, series, formatValue, height, minTop, integer, scheme]);

  return <div ref={ref} className="time-chart" role="img" aria-label={label} />;
}

export default TimeChart;
