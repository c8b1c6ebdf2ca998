import { useEffect, useState, type ComponentType } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { Button } from '../../../components/ui/button';
import { relayHealthQueryOptions } from '../api/list-relay-health';
import { relaysQueryOptions } from '../api/list-relays';
import type { RelaysPanelProps } from './relays-panel';

// The Relays view is a chunk of its own, fetched when it is first asked for (or the button pointed at), so the
// list view's script stays within its budget (e2e/specs/static.spec.ts), as the Overview's is.
let loading: Promise<ComponentType<RelaysPanelProps>> | undefined;
function loadPanel(): Promise<ComponentType<RelaysPanelProps>> {
  loading ??= import('./relays-panel').then((module) => module.RelaysPanel);
  // A failed fetch (the network, a new deployment) is tried again next time.
  loading.catch(() => (loading = undefined));
  return loading;
}

interface RelaysButtonProps {
  token: string;
  /** Open or not: the app holds it, so the health strip's "Relay down" opens the same view. */
  isOpen: boolean;
  onOpenChange: (isOpen: boolean) => void;
}

/** The header's "Relays" button and the Relays view it opens (docs/console.md §10.22). */
export function RelaysButton({ token, isOpen, onOpenChange }: RelaysButtonProps) {
  const [Panel, setPanel] = useState<ComponentType<RelaysPanelProps> | null>(null);
  const [hasFailed, setFailed] = useState(false);
  const queryClient = useQueryClient();

  // Opened from here or from the strip: the chunk is fetched then, and the relays asked for meanwhile.
  useEffect(() => {
    if (!isOpen || Panel || hasFailed) return;
    let isCurrent = true;
    void queryClient.prefetchQuery(relaysQueryOptions(token));
    void queryClient.prefetchQuery(relayHealthQueryOptions(token));
    loadPanel().then(
      (component) => isCurrent && setPanel(() => component),
      () => isCurrent && setFailed(true),
    );
    return () => {
      isCurrent = false;
    };
  }, [isOpen, Panel, hasFailed, queryClient, token]);

  return (
    <>
      <Button
        variant="ghost"
        onClick={() => {
          setFailed(false);
          onOpenChange(true);
        }}
        onPointerEnter={() => void loadPanel().catch(() => undefined)}
        onFocus={() => void loadPanel().catch(() => undefined)}
        aria-haspopup="dialog"
      >
        Relays
      </Button>
      {hasFailed && isOpen ? (
        <span role="alert" className="muted">
          The Relays view could not be loaded; try again.
        </span>
      ) : null}
      {isOpen && Panel ? <Panel token={token} onClose={() => onOpenChange(false)} /> : null}
    </>
  );
}
