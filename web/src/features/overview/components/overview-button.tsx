import { lazy, Suspense, useState } from 'react';
import { Button } from '../../../components/ui/button';
import type { OverviewPanelProps } from './overview-panel';

/** Marks the moment the Overview was asked for (the first chart's goal is measured from here). */
export const OPEN_MARK = 'outbox:overview-open';

// The Overview and its chart library are a chunk of their own, fetched when it is first asked for (or pointed
// at), so the list view's script stays as it was (ARCHITECTURE.md: the Overview's charts).
const loadPanel = () => import('./overview-panel');
const OverviewPanel = lazy(loadPanel);

/** The header's "Overview" button and the Overview it opens. */
export function OverviewButton({ token, onOpenApplication }: Pick<OverviewPanelProps, 'token' | 'onOpenApplication'>) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button
        variant="ghost"
        onClick={() => {
          performance.mark(OPEN_MARK);
          setOpen(true);
        }}
        // Pointed at or focused: the chunk starts loading before the click.
        onPointerEnter={() => void loadPanel()}
        onFocus={() => void loadPanel()}
        aria-haspopup="dialog"
      >
        Overview
      </Button>
      {open ? (
        <Suspense fallback={null}>
          <OverviewPanel
            token={token}
            onClose={() => setOpen(false)}
            onOpenApplication={(application) => {
              setOpen(false);
              onOpenApplication(application);
            }}
          />
        </Suspense>
      ) : null}
    </>
  );
}
