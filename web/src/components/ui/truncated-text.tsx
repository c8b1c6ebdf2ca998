interface TruncatedTextProps {
  text: string;
  /** The tooltip; defaults to the text itself. null: none here (an ancestor, e.g. the cell, holds it). */
  title?: string | null;
  className?: string;
}

/** One line cut with an ellipsis; the full value is in the tooltip (docs/console.md §10.8). */
export function TruncatedText({ text, title, className }: TruncatedTextProps) {
  return (
    <span className={['truncate', className ?? ''].filter(Boolean).join(' ')} title={title === null ? undefined : (title ?? text)}>
      {text}
    </span>
  );
}
