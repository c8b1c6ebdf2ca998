import { useState } from 'react';
import { Button } from '../../../components/ui/button';
import { AuditPanel } from './audit-panel';

/** The header's "Audit log" button and the panel it opens. */
export function AuditButton({ token }: { token: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button variant="ghost" onClick={() => setOpen(true)} aria-haspopup="dialog">
        Audit log
      </Button>
      {open ? <AuditPanel token={token} onClose={() => setOpen(false)} /> : null}
    </>
  );
}
