import { useEffect, useState, type DragEvent, type KeyboardEvent } from 'react';
import type { ColumnSizingState, Updater } from '@tanstack/react-table';
import { columnOf, columnOrderOf, dataColumnOf, type DataColumnId } from './mails-columns';
import { MAX_COLUMN_SIZE, MIN_COLUMN_SIZE, loadLayout, moveColumn, saveLayout, type ColumnLayout } from './table-layout';

const RESIZE_STEP = 16;

function applyUpdater<T>(updater: Updater<T>, previous: T): T {
  return typeof updater === 'function' ? (updater as (old: T) => T)(previous) : updater;
}

/**
 * The grid template of the table's rows: data columns share the spare width in proportion to their size
 * and growth factor; fixed columns keep their width (the action column 70 px, docs/console.md §2).
 */
export function gridTemplateOf(columns: readonly { id: string; size: number }[]): string {
  return columns
    .map(({ id, size }) => {
      const column = columnOf(id);
      return column?.kind === 'fixed' ? `${column.width}px` : `minmax(${size}px, ${Math.round(size * (column?.growth ?? 1))}fr)`;
    })
    .join(' ');
}

/**
 * The column layout of the mails table: order and widths (remembered per browser), moved by drag-and-drop or
 * by Alt+←/→ (move) and Alt+Shift+←/→ (resize) on a header. The fixed columns (selection, actions) take part in none of it.
 * `isResizing` comes from the table (a mouse resize in progress must not start a drag).
 */
export function useTableLayout() {
  const [layout, setLayout] = useState<ColumnLayout>(loadLayout);
  const [draggedId, setDraggedId] = useState<string | null>(null);
  const [dropTargetId, setDropTargetId] = useState<string | null>(null);

  useEffect(() => {
    saveLayout(layout);
  }, [layout]);

  function onSizingChange(updater: Updater<ColumnSizingState>) {
    setLayout((current) => ({ ...current, sizing: applyUpdater<ColumnSizingState>(updater, current.sizing) }));
  }

  function moveBy(columnId: string, delta: number) {
    setLayout((current) => {
      const index = current.order.indexOf(columnId as DataColumnId);
      const target = current.order[index + delta];
      return target === undefined || index < 0 ? current : { ...current, order: moveColumn(current.order, columnId, target) };
    });
  }

  function resizeBy(columnId: string, delta: number) {
    setLayout((current) => {
      const base = current.sizing[columnId] ?? dataColumnOf(columnId)?.size ?? MIN_COLUMN_SIZE;
      const size = Math.min(MAX_COLUMN_SIZE, Math.max(MIN_COLUMN_SIZE, base + delta));
      return { ...current, sizing: { ...current.sizing, [columnId]: size } };
    });
  }

  /** Alt+←/→ moves the column, Alt+Shift+←/→ resizes it; returns whether the key was taken. */
  function handleHeaderKey(event: KeyboardEvent<HTMLElement>, columnId: string): boolean {
    if (!dataColumnOf(columnId) || !event.altKey || (event.key !== 'ArrowLeft' && event.key !== 'ArrowRight')) return false;
    event.preventDefault();
    const direction = event.key === 'ArrowLeft' ? -1 : 1;
    if (event.shiftKey) resizeBy(columnId, direction * RESIZE_STEP);
    else moveBy(columnId, direction);
    return true;
  }

  function dragHandlers(columnId: string, isResizing: boolean) {
    // draggable="false" explicitly: a <th> is not draggable anyway, but the attribute says so to tools and tests.
    if (!dataColumnOf(columnId)) return { draggable: false };
    return {
      draggable: !isResizing,
      onDragStart(event: DragEvent<HTMLElement>) {
        if (isResizing) {
          event.preventDefault();
          return;
        }
        event.dataTransfer.effectAllowed = 'move';
        event.dataTransfer.setData('text/plain', columnId);
        setDraggedId(columnId);
      },
      onDragOver(event: DragEvent<HTMLElement>) {
        if (draggedId === null) return;
        event.preventDefault();
        event.dataTransfer.dropEffect = 'move';
        if (dropTargetId !== columnId) setDropTargetId(columnId);
      },
      onDragLeave() {
        setDropTargetId((current) => (current === columnId ? null : current));
      },
      onDrop(event: DragEvent<HTMLElement>) {
        event.preventDefault();
        const moved = draggedId ?? event.dataTransfer.getData('text/plain');
        if (moved) setLayout((current) => ({ ...current, order: moveColumn(current.order, moved, columnId) }));
        setDraggedId(null);
        setDropTargetId(null);
      },
      onDragEnd() {
        setDraggedId(null);
        setDropTargetId(null);
      },
    };
  }

  return {
    /** Every column's id: the fixed ones in their places, the data columns in the operator's order. */
    columnOrder: columnOrderOf(layout.order),
    sizing: layout.sizing,
    onSizingChange,
    handleHeaderKey,
    dragHandlers,
    isDragging: (columnId: string) => draggedId === columnId,
    isDropTarget: (columnId: string) => dropTargetId === columnId && draggedId !== columnId,
  };
}
