import { useState, type ComponentType } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { Button } from '../../../components/ui/button';
import { statisticsQuery } from '../api/overview-api';
import type { OverviewPanelProps } from './overview-panel';
import { DEFAULT_RANGE, rangeOf } from './ranges';

/** Marks the moment the Overview was asked for (the first chart's goal is measured from here). */
export const OPEN_MARK = 'outbox:overview-open';

// The Overview and its chart library are a chunk of their own, fetched when it is first asked for (or pointed
// at), so the list view's script stays as it was (ARCHITECTURE.md: the Overview's charts). Imported by hand
// rather than through React.lazy: a Suspense boundary that showed its fallback holds the content back until
// 300 ms after it (React's reveal throttle), which alone would spend the first chart's budget.
let loading: Promise<ComponentType<OverviewPanelProps>> | undefined;
function loadPanel(): Promise<ComponentType<OverviewPanelProps>> {
  loading ??= import('./overview-panel').then((module) => module.OverviewPanel);
  // A failed fetch (the network, a new deployment) is tried again next time.
  loading.catch(() => (loading = undefined));
  return loading;
}

/** The header's "Overview" button and the Overview it opens. */
export function OverviewButton({ token, onOpenApplication }: Pick<OverviewPanelProps, 'token' | 'onOpenApplication'>) {
  const [open, setOpen] = useState(false);
  const [Panel, setPanel] = useState<ComponentType<OverviewPanelProps> | null>(null);
  const [failed, setFailed] = useState(false);
  const queryClient = useQueryClient();
  return (
    <>
      <Button
        variant="ghost"
        onClick={() => {
          performance.mark(OPEN_MARK);
          // The first chart's numbers are asked for now, while the chunk loads and renders, not after: the
          // panel's query finds them under the same key.
          const range = rangeOf(DEFAULT_RANGE, Date.now(), { from: '', to: '' });
          if (!('error' in range)) void queryClient.prefetchQuery(statisticsQuery(token, range));
          setFailed(false);
          setOpen(true);
          loadPanel().then(
            (component) => setPanel(() => component),
            () => setFailed(true),
          );
        }}
        // Pointed at or focused: the chunk starts loading before the click.
        onPointerEnter={() => void loadPanel().catch(() => undefined)}
        onFocus={() => void loadPanel().catch(() => undefined)}
        aria-haspopup="dialog"
      >
        Overview
      </Button>
      {failed && open ? (
        <span role="alert" className="muted">
          The Overview could not be loaded; try again.
        </span>
      ) : null}
      {open && Panel && !failed ? (
        <Panel
          token={token}
          onClose={() => setOpen(false)}
          onOpenApplication={(application) => {
            setOpen(false);
            onOpenApplication(application);
          }}
        />
      ) : null}
    </>
  );
}
