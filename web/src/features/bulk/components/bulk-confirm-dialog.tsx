import { useEffect, useRef, useState } from 'react';
import type { BulkAction, BulkResult } from '@outbox/contract';
import { Button } from '../../../components/ui/button';
import { ErrorMessage } from '../../../components/ui/error-message';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { isCountChanged, postBulkAction, useBulkAction, type BulkTarget } from '../api/bulk-action';
import { ACTION_LABEL, formatCount, mailsText, movingText, skipReasons, skippedCount } from './bulk-text';

interface BulkConfirmDialogProps {
  token: string;
  action: BulkAction;
  target: BulkTarget;
  /** Mails selected, as the operator saw them. */
  count: number;
  onCancel: () => void;
  onDone: (result: BulkResult) => void;
  /** The server refused with 409 count_changed: the list the operator saw is out of date. */
  onCountChanged: () => void;
}

type Preview = { state: 'loading' } | { state: 'ready'; result: BulkResult } | { state: 'failed'; countChanged: boolean };

function countChangedText(count: number): string {
  return `The filter now matches far more mails than the ${formatCount(count)} you selected. Nothing was changed: look at the list again and select anew.`;
}

/**
 * The confirmation before a bulk action (docs/console.md §10): it first asks the server what would happen (a dry
 * run), then names how many mails will move, per status, and how many will be skipped and why.
 */
export function BulkConfirmDialog({ token, action, target, count, onCancel, onDone, onCountChanged }: BulkConfirmDialogProps) {
  const [preview, setPreview] = useState<Preview>({ state: 'loading' });
  const run = useBulkAction(token);
  const label = ACTION_LABEL[action];

  // Asked once per opening, whatever the callback's identity.
  const countChanged = useRef(onCountChanged);
  useEffect(() => {
    countChanged.current = onCountChanged;
  });

  useEffect(() => {
    let live = true;
    postBulkAction(token, { action, target, dryRun: true }).then(
      (result) => live && setPreview({ state: 'ready', result }),
      (error: unknown) => {
        if (!live) return;
        setPreview({ state: 'failed', countChanged: isCountChanged(error) });
        if (isCountChanged(error)) countChanged.current();
      },
    );
    return () => {
      live = false;
    };
  }, [token, action, target]);

  const result = preview.state === 'ready' ? preview.result : null;
  // After a refusal there is nothing left to confirm: only Close, and focus on it.
  const failed = preview.state === 'failed' || run.isError;
  const actionsRef = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (failed) actionsRef.current?.querySelector('button')?.focus();
  }, [failed]);
  const moving = result?.done ?? 0;
  const skipped = result ? skippedCount(result.skipped) : 0;

  return (
    <ModalDialog title={`${label} ${mailsText(count)}?`} onClose={onCancel}>
      <div className="modal__body" aria-live="polite">
        {preview.state === 'loading' ? <p className="muted">Checking what would change…</p> : null}
        <ErrorMessage
          text={
            preview.state !== 'failed'
              ? null
              : preview.countChanged
                ? countChangedText(count)
                : 'Could not check these mails. Nothing was changed; try again.'
          }
        />
        {result ? (
          <ul className="bulk-preview">
            <li data-testid="bulk-will-move">
              {moving === 0
                ? `None of them can be ${label.toLowerCase()}d.`
                : `Will ${label.toLowerCase()}: ${mailsText(moving)} (${movingText(result.moving ?? [])})`}
            </li>
            {skipped > 0 ? (
              <li data-testid="bulk-will-skip">{`Will skip: ${mailsText(skipped)} (${skipReasons(action, result.skipped)})`}</li>
            ) : null}
          </ul>
        ) : null}
        <ErrorMessage
          text={
            !run.isError
              ? null
              : isCountChanged(run.error)
                ? countChangedText(count)
                : `The ${label} did not go through. Look at the list: some mails may have moved.`
          }
        />
      </div>
      <div className="modal__actions" ref={actionsRef}>
        <Button onClick={onCancel} data-autofocus>
          {failed ? 'Close' : 'Cancel'}
        </Button>
        {failed ? null : (
          <Button
            variant={action === 'delete' ? 'danger' : 'primary'}
            disabled={moving === 0 || run.isPending}
            onClick={() =>
              run.mutate(
                { action, target, dryRun: false },
                { onSuccess: onDone, onError: (error) => isCountChanged(error) && onCountChanged() },
              )
            }
          >
            {run.isPending ? `${label}…` : `${label} ${mailsText(moving)}`}
          </Button>
        )}
      </div>
    </ModalDialog>
  );
}
