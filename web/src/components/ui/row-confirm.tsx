import { Button } from './button';

interface RowConfirmProps {
  /** What the row asks: "Remove eu?", "Delete this endpoint?". */
  question: string;
  /** The button that does it: "Remove", "Delete", "Revoke". */
  action: string;
  /** While the action runs, its button is disabled (no second click sends it twice). */
  isBusy: boolean;
  onConfirm: () => void;
  onKeep: () => void;
}

/**
 * A destructive row action asked in the row itself (the panels' Remove, Delete and Revoke): the question, the
 * action as a danger button that takes the focus, and Keep, which changes nothing.
 */
export function RowConfirm({ question, action, isBusy, onConfirm, onKeep }: RowConfirmProps) {
  return (
    <>
      <span>{question}</span>
      <Button size="small" variant="danger" disabled={isBusy} onClick={onConfirm} autoFocus>
        {action}
      </Button>
      <Button size="small" variant="ghost" onClick={onKeep}>
        Keep
      </Button>
    </>
  );
}
