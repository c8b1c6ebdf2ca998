import './suppressions.css';
import { useState } from 'react';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { Tabs } from '../../../components/ui/tabs';
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

/** The Suppressions panel (docs/console.md §10.19): two tabs, the suppression list and the bounce reports that matched no mail. */
export function SuppressionsPanel({ token, onClose }: SuppressionsPanelProps) {
  const [tab, setTab] = useState<TabId>('addresses');
  return (
    <ModalDialog title="Suppressions" onClose={onClose} placement="side" className="suppressions">
      <Tabs label="Suppressions" tabs={TABS} selected={tab} onSelect={setTab}>
        {tab === 'addresses' ? <SuppressionList token={token} /> : <UnmatchedReports token={token} />}
      </Tabs>
    </ModalDialog>
  );
}
