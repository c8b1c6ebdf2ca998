import { useState } from 'react';
import { Button } from '../../../components/ui/button';
import { ApplicationsPanel } from './applications-panel';

/** The header's "Applications" button and the panel it opens. */
export function ApplicationsButton({ token }: { token: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button variant="ghost" onClick={() => setOpen(true)} aria-haspopup="dialog">
        Applications
      </Button>
      {open ? <ApplicationsPanel token={token} onClose={() => setOpen(false)} /> : null}
    </>
  );
}
