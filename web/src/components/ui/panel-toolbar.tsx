import { Button } from './button';

interface PanelAddToolbarProps {
  /** The primary button's text ("Add relay"). */
  addText: string;
  onAdd: () => void;
  onClose: () => void;
}

/**
 * The toolbar above a side panel's list (applications, webhooks, relays): the button that adds one, which takes the
 * focus when the panel opens, and Close.
 */
export function PanelAddToolbar({ addText, onAdd, onClose }: PanelAddToolbarProps) {
  return (
    <div className="panel__toolbar">
      <Button variant="primary" size="small" onClick={onAdd} data-autofocus>
        {addText}
      </Button>
      <Button size="small" variant="ghost" onClick={onClose}>
        Close
      </Button>
    </div>
  );
}
