import './relays.css';
import { useState } from 'react';
import { ModalDialog } from '../../../components/ui/modal-dialog';
import { Tabs } from '../../../components/ui/tabs';
import { RelayList } from './relay-list';
import { RoutesEditor } from './routes-editor';

const TABS = [
  { id: 'relays', label: 'Relays' },
  { id: 'routes', label: 'Routes' },
] as const;
type TabId = (typeof TABS)[number]['id'];

export interface RelaysPanelProps {
  token: string;
  onClose: () => void;
}

/**
 * The Relays view (docs/console.md §10.22): a panel over the right of the screen with two tabs, the relays with
 * their health, and the routes editor. A chunk of its own, loaded when first asked for (relays-button.tsx).
 */
export function RelaysPanel({ token, onClose }: RelaysPanelProps) {
  const [tab, setTab] = useState<TabId>('relays');
  return (
    <ModalDialog title="Relays" onClose={onClose} placement="side" className="relays">
      <Tabs label="Relays and routes" tabs={TABS} selected={tab} onSelect={setTab}>
        {tab === 'relays' ? <RelayList token={token} onClose={onClose} /> : <RoutesEditor token={token} onClose={onClose} />}
      </Tabs>
    </ModalDialog>
  );
}
