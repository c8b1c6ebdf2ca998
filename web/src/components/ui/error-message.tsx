/**
 * What went wrong, in a side panel or a form (the modal's error style), read out at once by a screen reader
 * (role="alert"); nothing while there is no text. `id` lets a field point at it (aria-describedby); `className` adds
 * a form's own placing to the shared style.
 */
export function ErrorMessage({ text, id, className }: { text: string | null | undefined; id?: string | undefined; className?: string }) {
  if (!text) return null;
  return (
    <p id={id} className={className ? `modal__error ${className}` : 'modal__error'} role="alert">
      {text}
    </p>
  );
}
