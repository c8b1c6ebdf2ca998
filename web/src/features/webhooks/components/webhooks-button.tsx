import { useState } from 'react';
import { Button } from '../../../components/ui/button';
import { WebhooksPanel } from './webhooks-panel';

/** The header's "Webhooks" button and the panel it opens. */
export function WebhooksButton({ token }: { token: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button variant="ghost" onClick={() => setOpen(true)} aria-haspopup="dialog">
        Webhooks
      </Button>
      {open ? <WebhooksPanel token={token} onClose={() => setOpen(false)} /> : null}
    </>
  );
}
