import { DATA_COLUMN_IDS, type DataColumnId } from './mails-columns';

/** docs/console.md §2 / §9 sizes, in CSS pixels (each column's own width is in mails-columns.tsx). */
export const ROW_HEIGHT = 60;
export const HEADER_HEIGHT = 50;
export const FOOTER_HEIGHT = 50;
/** The bounds of a data column's width, however it is resized or stored. */
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
