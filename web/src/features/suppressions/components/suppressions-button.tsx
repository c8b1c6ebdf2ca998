import { useState } from 'react';
import { Button } from '../../../components/ui/button';
import { SuppressionsPanel } from './suppressions-panel';

/** The header's "Suppressions" button and the panel it opens. */
export function SuppressionsButton({ token }: { token: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button variant="ghost" onClick={() => setOpen(true)} aria-haspopup="dialog">
        Suppressions
      </Button>
      {open ? <SuppressionsPanel token={token} onClose={() => setOpen(false)} /> : null}
    </>
  );
}
