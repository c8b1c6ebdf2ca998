import { useState } from 'react';
import type { BulkAction, BulkResult } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import type { BulkTarget } from '../api/bulk-action';
import { BulkConfirmDialog } from './bulk-confirm-dialog';
import { ACTION_LABEL, actionsFor, formatCount, mailsText, outcomeText } from './bulk-text';

/** The list's selection as the mails feature hands it over (its MailSelection; features never import each other). */
export interface BulkSelection {
  mails: { id: number; status: number }[];
  matching: { filter: Record<string, string>; total: number; statuses: number[] } | null;
  count: number;
  canSelectAllMatching: boolean;
  total: number;
  selectAllMatching: () => void;
  clear: () => void;
}

interface BulkBarProps {
  token: string;
  selection: BulkSelection;
  /** After an action went through: the list reloads and the selection clears. */
  onActed: () => void;
}

const ALL_STATUSES = [0, 1, 2, 3, 4, 5];

/**
 * The bar over the table's foot while mails are selected (docs/console.md §10): how many, "Select all N matching",
 * the actions the selection allows, and after an action its outcome line ("48 dequeued · 2 skipped: already
 * Processing"), which stays until the next selection.
 */
export function BulkBar({ token, selection, onActed }: BulkBarProps) {
  const [pending, setPending] = useState<{ action: BulkAction; target: BulkTarget; count: number } | null>(null);
  const [outcome, setOutcome] = useState<BulkResult | null>(null);
  const { matching } = selection;
  const statuses = matching ? (matching.statuses.length > 0 ? matching.statuses : ALL_STATUSES) : selection.mails.map((m) => m.status);
  const actions = actionsFor(statuses);
  const hasSelection = selection.count > 0;

  function start(action: BulkAction) {
    const target: BulkTarget = matching
      ? { filter: matching.filter, expectedCount: matching.total }
      : { ids: selection.mails.map((m) => m.id) };
    setOutcome(null);
    setPending({ action, target, count: selection.count });
  }

  function done(result: BulkResult) {
    setPending(null);
    setOutcome(result);
    onActed();
  }

  return (
    <>
      {hasSelection ? (
        <div className="bulk-bar" role="toolbar" aria-label="Selected mails">
          <span className="bulk-bar__count" data-testid="bulk-count">
            {matching ? `All ${mailsText(matching.total)} matching selected` : `${mailsText(selection.count)} selected`}
          </span>
          {selection.canSelectAllMatching ? (
            <Button size="small" variant="ghost" onClick={selection.selectAllMatching}>
              {`Select all ${formatCount(selection.total)} matching`}
            </Button>
          ) : null}
          <span className="bulk-bar__actions">
            {actions.map((action) => (
              <Button key={action} size="small" variant={action === 'delete' ? 'danger' : 'primary'} onClick={() => start(action)}>
                {`${ACTION_LABEL[action]}…`}
              </Button>
            ))}
            {actions.length === 0 ? <span className="muted">No action fits these mails (Processing)</span> : null}
          </span>
          <Button size="small" variant="ghost" onClick={selection.clear}>
            Clear selection
          </Button>
        </div>
      ) : null}
      <p className={`bulk-outcome${outcome && !hasSelection ? ' is-shown' : ''}`} role="status">
        {outcome && !hasSelection ? outcomeText(outcome) : ''}
      </p>
      {pending ? (
        <BulkConfirmDialog
          token={token}
          action={pending.action}
          target={pending.target}
          count={pending.count}
          onCancel={() => setPending(null)}
          onDone={done}
          // The list reloads with the new count and the selection clears; the dialog stays to say why.
          onCountChanged={onActed}
        />
      ) : null}
    </>
  );
}
