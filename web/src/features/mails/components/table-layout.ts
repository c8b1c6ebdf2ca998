/** docs/console.md §2 / §9 sizes, in CSS pixels. */
export const ROW_HEIGHT = 60;
export const HEADER_HEIGHT = 50;
export const FOOTER_HEIGHT = 50;
export const ACTION_COLUMN_WIDTH = 70;

export const ACTION_COLUMN_ID = 'actions';

/**
 * The selection column (docs/console.md §10): a checkbox per row, before the spec's columns. Fixed, like the
 * action column: not sorted, resized or moved.
 */
export const SELECT_COLUMN_ID = 'select';
export const SELECT_COLUMN_WIDTH = 40;

/** The data columns in their default order; the action column is always appended last. */
export const DATA_COLUMN_IDS = ['from', 'to', 'subject', 'status', 'providerSentDate', 'receivedDate', 'lastUpdate'] as const;
export type DataColumnId = (typeof DATA_COLUMN_IDS)[number];

export const DEFAULT_COLUMN_SIZES: Record<DataColumnId, number> = {
  from: 160,
  to: 180,
  subject: 180,
  status: 150,
  providerSentDate: 158,
  receivedDate: 158,
  lastUpdate: 158,
};

/**
 * How a column shares the width beyond the sum of sizes (wide screens): text columns take most of it,
 * dates and status barely grow. The defaults (with the selection and action columns) fit 1280 px without a horizontal scroll bar.
 */
export const COLUMN_GROWTH: Record<DataColumnId, number> = {
  from: 1.2,
  to: 1.2,
  subject: 1.8,
  status: 0.3,
  providerSentDate: 0.2,
  receivedDate: 0.2,
  lastUpdate: 0.2,
};
export const MIN_COLUMN_SIZE = 80;
export const MAX_COLUMN_SIZE = 1200;

/** Column widths and order are remembered per browser (layout only, never credentials). */
export const LAYOUT_STORAGE_KEY = 'outbox.columns.v1';

export interface ColumnLayout {
  order: DataColumnId[];
  sizing: Record<string, number>;
}

function isDataColumnId(value: unknown): value is DataColumnId {
  return typeof value === 'string' && (DATA_COLUMN_IDS as readonly string[]).includes(value);
}

export function defaultLayout(): ColumnLayout {
  return { order: [...DATA_COLUMN_IDS], sizing: {} };
}

/** Reads the remembered layout; anything unknown or malformed falls back to the defaults. */
export function loadLayout(): ColumnLayout {
  let raw: string | null = null;
  try {
    raw = window.localStorage.getItem(LAYOUT_STORAGE_KEY);
  } catch {
    return defaultLayout();
  }
  if (!raw) return defaultLayout();
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (typeof parsed !== 'object' || parsed === null) return defaultLayout();
    const { order, sizing } = parsed as { order?: unknown; sizing?: unknown };
    const known = Array.isArray(order) ? order.filter(isDataColumnId) : [];
    const unique = [...new Set(known)];
    const fullOrder = [...unique, ...DATA_COLUMN_IDS.filter((id) => !unique.includes(id))];
    const cleanSizing: Record<string, number> = {};
    if (typeof sizing === 'object' && sizing !== null) {
      for (const [id, size] of Object.entries(sizing as Record<string, unknown>)) {
        if (isDataColumnId(id) && typeof size === 'number' && Number.isFinite(size)) {
          cleanSizing[id] = Math.min(MAX_COLUMN_SIZE, Math.max(MIN_COLUMN_SIZE, Math.round(size)));
        }
      }
    }
    return { order: fullOrder, sizing: cleanSizing };
  } catch {
    return defaultLayout();
  }
}

export function saveLayout(layout: ColumnLayout): void {
  try {
    window.localStorage.setItem(LAYOUT_STORAGE_KEY, JSON.stringify(layout));
  } catch {
    // Storage full or disabled: the layout is simply not remembered.
  }
}

/** Moves `moved` to the place of `target` in `order`. */
export function moveColumn(order: readonly DataColumnId[], moved: string, target: string): DataColumnId[] {
  const from = order.indexOf(moved as DataColumnId);
  const to = order.indexOf(target as DataColumnId);
  if (from < 0 || to < 0 || from === to) return [...order];
  const next = [...order];
  const [item] = next.splice(from, 1);
  if (item !== undefined) next.splice(to, 0, item);
  return next;
}
