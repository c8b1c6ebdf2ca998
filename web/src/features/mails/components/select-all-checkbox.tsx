import { useEffect, useRef } from 'react';

interface SelectAllCheckboxProps {
  checked: boolean;
  /** Some rows of the page are selected, not all: shown as a dash (and read as "mixed"). */
  indeterminate: boolean;
  disabled: boolean;
  onChange: (checked: boolean) => void;
}

/** The selection column's header: selects or clears every row of the page shown. */
export function SelectAllCheckbox({ checked, indeterminate, disabled, onChange }: SelectAllCheckboxProps) {
  const ref = useRef<HTMLInputElement>(null);
  // `indeterminate` exists only as a DOM property.
  useEffect(() => {
    if (ref.current) ref.current.indeterminate = indeterminate && !checked;
  }, [indeterminate, checked]);
  return (
    <input
      ref={ref}
      type="checkbox"
      className="select-box"
      checked={checked}
      disabled={disabled}
      onChange={(event) => onChange(event.target.checked)}
      aria-label="Select all on this page"
    />
  );
}
