/** The attributes that mark a field the server's refusal names (aria-invalid, and the refusal as its description). */
export type InvalidProps = { 'aria-invalid'?: true; 'aria-describedby'?: string };

interface RuleFieldProps {
  label: string;
  value: string;
  onChange: (value: string) => void;
  /** Set when the refusal names this field. */
  invalid: InvalidProps;
  /** A select of these choices; without them the field is a text input. */
  choices?: readonly { value: string; label: string }[];
  placeholder?: string;
}

/** One field of a route rule: its name above a select (the choices given) or a text input. */
export function RuleField({ label, value, onChange, invalid, choices, placeholder }: RuleFieldProps) {
  return (
    <label className="panel__field">
      <span>{label}</span>
      {choices ? (
        <select value={value} onChange={(e) => onChange(e.target.value)} {...invalid}>
          {choices.map((choice) => (
            <option key={choice.value} value={choice.value}>
              {choice.label}
            </option>
          ))}
        </select>
      ) : (
        <input
          type="text"
          spellCheck={false}
          placeholder={placeholder}
          value={value}
          onChange={(e) => onChange(e.target.value)}
          {...invalid}
        />
      )}
    </label>
  );
}
