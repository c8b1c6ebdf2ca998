import './suppressions.css';
import { useId, useRef, useState, type KeyboardEvent } from 'react';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { SuppressionList } from './suppression-list';
import { UnmatchedReports } from './unmatched-reports';

const TABS = [
  { id: 'addresses', label: 'Suppressed addresses' },
  { id: 'unmatched', label: 'Unmatched reports' },
] as const;
type TabId = (typeof TABS)[number]['id'];

interface SuppressionsPanelProps {
  token: string;
  onClose: () => void;
}

/**
 * The Suppressions panel (docs/console.md §10.19): two tabs, the suppression list and the bounce reports that
 * matched no mail. Tabs follow the WAI-ARIA tabs pattern: one tab stop, arrows move between them.
 */
export function SuppressionsPanel({ token, onClose }: SuppressionsPanelProps) {
  const [tab, setTab] = useState<TabId>('addresses');
  const baseId = useId();
  const tabRefs = useRef<Record<string, HTMLButtonElement | null>>({});

  function onTabKey(event: KeyboardEvent<HTMLDivElement>) {
    if (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft') return;
    event.preventDefault();
    const index = TABS.findIndex((t) => t.id === tab);
    const next = TABS[(index + (event.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length]!;
    setTab(next.id);
    tabRefs.current[next.id]?.focus();
  }

  return (
    <ModalDialog title="Suppressions" onClose={onClose} placement="side" className="suppressions">
      <div role="tablist" aria-label="Suppressions" className="suppressions__tabs" onKeyDown={onTabKey}>
        {TABS.map((t) => (
          <button
            key={t.id}
            ref={(element) => {
              tabRefs.current[t.id] = element;
            }}
            type="button"
            role="tab"
            id={`${baseId}-tab-${t.id}`}
            aria-selected={tab === t.id}
            aria-controls={`${baseId}-panel-${t.id}`}
            tabIndex={tab === t.id ? 0 : -1}
            className="suppressions__tab"
            onClick={() => setTab(t.id)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`${baseId}-panel-${tab}`} aria-labelledby={`${baseId}-tab-${tab}`} className="suppressions__tabpanel">
        {tab === 'addresses' ? <SuppressionList token={token} /> : <UnmatchedReports token={token} />}
      </div>
    </ModalDialog>
  );
}
