/**
 * What a side panel's last action did ("Relay eu added."), under its toolbar. Always in the page, empty until
 * something happened, so a screen reader announces each new sentence (role="status" is read on change, not on
 * arrival), and one line tall even when empty, so the table under it does not jump when a sentence comes.
 */
export function PanelNotice({ text }: { text: string | null }) {
  return (
    <p role="status" className="muted panel__notice">
      {text ?? ''}
    </p>
  );
}
