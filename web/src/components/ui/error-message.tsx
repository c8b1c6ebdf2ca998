/**
 * What went wrong, in a side panel or a form (the modal's error style), read out at once by a screen reader
 * (role="alert"); nothing while there is no text. `id` lets a field point at it (aria-describedby).
 */
export function ErrorMessage({ text, id }: { text: string | null | undefined; id?: string | undefined }) {
  if (!text) return null;
  return (
    <p id={id} className="modal__error" role="alert">
      {text}
    </p>
  );
}
