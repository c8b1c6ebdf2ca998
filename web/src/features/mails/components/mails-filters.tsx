import { useEffect, useRef, useState, type RefObject } from 'react';
import { MIN_INDEXED_SEARCH } from '@outbox/contract';
import { STATUSES } from '@outbox/contract/status';
import type { MailFilters } from './mail-view';

/**
 * How long typing pauses before the search is sent: one call per word, not per key, for a typist going
 * faster than about seven keys a second. Short, because the rows should follow a keystroke quickly
 * (docs/benchmarks.md); a slower typist costs a few more cheap calls.
 */
export const SEARCH_DEBOUNCE_MS = 150;
/**
 * A key after this much quiet is sent at once (leading edge): one more letter narrowing a search the
 * operator has looked at. Longer than a busy browser's hiccup mid-word, so a word typed still costs one or
 * two calls.
 */
export const SEARCH_SEND_AT_ONCE_AFTER_MS = 500;

const numberFormat = new Intl.NumberFormat('en-US');
export const formatCount = (value: number) => numberFormat.format(value);

interface MailsFiltersProps {
  filters: MailFilters;
  /** Mails per status code over the whole store (meta.counts of the last list answer); undefined before it. */
  counts: Record<string, number> | undefined;
  onChange: (filters: Partial<MailFilters>) => void;
  searchRef: RefObject<HTMLInputElement | null>;
}

/** The application chip's name: as the Overview named it, else its id (a link holds only the id). */
function applicationLabel({ application, applicationName }: MailFilters): string {
  if (applicationName) return applicationName;
  return application === 'none' ? 'none (no API key)' : `#${application}`;
}

/**
 * The filter bar above the table: one chip per status with its exact count, plus All (several chips may be
 * on at once); a debounced search over sender, recipients and subject (Esc clears it); a received-date range;
 * the application the list is narrowed to (from the Overview, or a link), with a chip that clears it.
 */
export function MailsFilters({ filters, counts, onChange, searchRef }: MailsFiltersProps) {
  const [text, setText] = useState(filters.q);
  const sentRef = useRef(filters.q);
  /** When the last key changed the text: a key after a pause starts a burst. */
  const lastKeyAtRef = useRef(Number.NEGATIVE_INFINITY);

  // The box follows the view when it changes from elsewhere (a link, a reset), not while the operator types.
  useEffect(() => {
    if (filters.q !== sentRef.current) {
      sentRef.current = filters.q;
      setText(filters.q);
    }
  }, [filters.q]);

  useEffect(() => {
    if (text === sentRef.current) return;
    const timer = window.setTimeout(() => {
      sentRef.current = text;
      onChange({ q: text });
    }, SEARCH_DEBOUNCE_MS);
    return () => window.clearTimeout(timer);
  }, [text, onChange]);

  const total = counts ? Object.values(counts).reduce((sum, count) => sum + count, 0) : undefined;
  const selected = new Set(filters.statuses);

  function toggle(code: number) {
    const next = new Set(selected);
    if (next.has(code)) next.delete(code);
    else next.add(code);
    onChange({ statuses: [...next].sort((a, b) => a - b) });
  }

  return (
    <div className="filters" role="search" aria-label="Filter mails">
      <div className="chips" role="group" aria-label="Status">
        <button type="button" className="chip" aria-pressed={selected.size === 0} onClick={() => onChange({ statuses: [] })}>
          <span>All</span>
          {total === undefined ? null : <span className="chip__count">{formatCount(total)}</span>}
        </button>
        {STATUSES.map((status) => (
          <button
            key={status.code}
            type="button"
            className="chip"
            aria-pressed={selected.has(status.code)}
            onClick={() => toggle(status.code)}
          >
            <span className="chip__dot" style={{ backgroundColor: status.hex }} aria-hidden="true" />
            <span>{status.name}</span>
            {counts ? <span className="chip__count">{formatCount(counts[String(status.code)] ?? 0)}</span> : null}
          </button>
        ))}
      </div>
      <div className="filters__fields">
        <input
          ref={searchRef}
          type="search"
          className="filters__search"
          aria-label="Search sender, recipients and subject"
          placeholder="Search sender, recipients, subject  ( / )"
          value={text}
          maxLength={200}
          onChange={(event) => {
            const next = event.target.value;
            const now = performance.now();
            const afterPause = now - lastKeyAtRef.current >= SEARCH_SEND_AT_ONCE_AFTER_MS;
            lastKeyAtRef.current = now;
            setText(next);
            // Leading edge: the first key after a pause (one more letter narrowing a search) is sent at
            // once, so the rows follow it without waiting out the debounce. Keys typed in a burst after it
            // still wait for the debounce. A search too short for the trigram index always waits.
            if (afterPause && next.trim().length >= MIN_INDEXED_SEARCH && next !== sentRef.current) {
              sentRef.current = next;
              onChange({ q: next });
            }
          }}
          onKeyDown={(event) => {
            if (event.key !== 'Escape') return;
            event.preventDefault();
            setText('');
            sentRef.current = '';
            if (filters.q !== '') onChange({ q: '' });
          }}
        />
        <label className="filters__date">
          <span>Received from</span>
          <input
            type="date"
            value={filters.receivedFrom ?? ''}
            max={filters.receivedTo ?? undefined}
            onChange={(event) => onChange({ receivedFrom: event.target.value || null })}
          />
        </label>
        <label className="filters__date">
          <span>to</span>
          <input
            type="date"
            aria-label="Received to"
            value={filters.receivedTo ?? ''}
            min={filters.receivedFrom ?? undefined}
            onChange={(event) => onChange({ receivedTo: event.target.value || null })}
          />
        </label>
        {filters.application !== null ? (
          <button
            type="button"
            className="chip chip--application"
            aria-label={`Application: ${applicationLabel(filters)}, clear this filter`}
            onClick={() => onChange({ application: null, applicationName: null })}
          >
            <span>Application: {applicationLabel(filters)}</span>
            <span aria-hidden="true">✕</span>
          </button>
        ) : null}
      </div>
    </div>
  );
}
