import { useEffect, useRef, useState } from 'react';
import { Button } from '../../../components/ui/button';
import { errorText } from '../../../lib/api-client';
import { getRemoteImageAsDataUrl } from '../api/get-remote-image';
import { inlineRemoteImages, type InlinedImages } from './remote-images';

/**
 * A mail's HTML body, rendered only inside a sandboxed iframe: `sandbox` without `allow-scripts` or
 * `allow-same-origin` (no script runs, the frame has an opaque origin and cannot reach the console),
 * content through `srcdoc`, and a CSP of its own that allows no fetch at all: images only as `data:` URLs.
 * The policy is a <meta> in <head>, before any <img>, so Chromium applies it before the body is parsed; the
 * frame also inherits the console page's CSP (server/src/app.ts), which allows no remote image either.
 */
export function frameDocumentOf(html: string): string {
  const policy = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:";
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${policy}"><base target="_blank"></head><body>${html}</body></html>`;
}

type RemoteImages = { phase: 'blocked' } | { phase: 'loading' } | ({ phase: 'loaded' } & InlinedImages);

/**
 * "Load remote images" (docs/console.md §10.10): remote images tell the sender the mail was opened and could
 * make the operator's browser reach any address, so none loads until the operator asks, and then the console
 * fetches each through the server's image proxy, which refuses private addresses (GET
 * /api/v1/mail/{id}/remote-image), and puts it into the frame as a `data:` URL. Why not a URL the frame loads
 * itself: the proxy wants the operator's token, which only goes in a header, and a frame with an opaque origin
 * and no scripts can send none; a signed URL would put a credential into the mail's document, and a `blob:`
 * URL of the console's origin is not the frame's to load. `data:` keeps the frame as closed as before the click.
 */
export function HtmlBody({ html, mailId, token }: { html: string; mailId: number; token: string }) {
  const [images, setImages] = useState<RemoteImages>({ phase: 'blocked' });
  const loading = useRef<AbortController | null>(null);
  useEffect(() => () => loading.current?.abort(), []);

  function loadRemoteImages() {
    const controller = new AbortController();
    loading.current = controller;
    setImages({ phase: 'loading' });
    void inlineRemoteImages(
      html,
      (url) => getRemoteImageAsDataUrl(token, mailId, url, controller.signal),
      (error) => errorText(error, 'the server could not fetch it'),
    ).then((inlined) => {
      if (!controller.signal.aborted) setImages({ phase: 'loaded', ...inlined });
    });
  }

  return (
    <div className="html-body">
      <div className="html-body__bar">
        <span className="muted" role="status">
          {statusLine(images)}
        </span>
        {images.phase === 'blocked' ? (
          <Button size="small" onClick={loadRemoteImages}>
            Load remote images
          </Button>
        ) : null}
      </div>
      <iframe
        className="html-body__frame"
        title="HTML body"
        sandbox=""
        referrerPolicy="no-referrer"
        srcDoc={frameDocumentOf(images.phase === 'loaded' ? images.html : html)}
      />
    </div>
  );
}

function statusLine(images: RemoteImages): string {
  switch (images.phase) {
    case 'blocked':
      return 'Remote images are blocked.';
    case 'loading':
      return 'Loading remote images through the server…';
    case 'loaded':
      if (images.total === 0) return 'This mail has no remote images.';
      if (images.failed === 0) return 'Remote images are loaded.';
      return `Remote images are loaded, except ${images.failed} of ${images.total}: ${images.firstError ?? 'the server could not fetch them'}`;
  }
}
