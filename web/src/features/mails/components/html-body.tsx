import { useState } from 'react';
import { Button } from '../../../components/ui/button';

/**
 * A mail's HTML body, rendered only inside a sandboxed iframe: `sandbox` without `allow-scripts` or
 * `allow-same-origin` (no script runs, the frame has an opaque origin and cannot reach the console),
 * content through `srcdoc`, and a CSP of its own that blocks every fetch; remote images only after the
 * operator asks ("Load remote images"), since they tell the sender the mail was opened.
 * The frame also inherits the console page's CSP, and a fetch must pass both: the page allows images from
 * anywhere (server/src/app.ts) so that this frame's own policy is what decides, img-src data: until the click.
 * The policy is a <meta> in <head>, before any <img>, so Chromium applies it before the body is parsed.
 */
export function frameDocumentOf(html: string, loadRemoteImages: boolean): string {
  const images = loadRemoteImages ? 'data: https: http:' : 'data:';
  const policy = `default-src 'none'; img-src ${images}; style-src 'unsafe-inline'; font-src data:`;
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${policy}"><base target="_blank"></head><body>${html}</body></html>`;
}

export function HtmlBody({ html }: { html: string }) {
  const [loadRemoteImages, setLoadRemoteImages] = useState(false);
  return (
    <div className="html-body">
      <div className="html-body__bar">
        <span className="muted">{loadRemoteImages ? 'Remote images are loaded.' : 'Remote images are blocked.'}</span>
        {loadRemoteImages ? null : (
          <Button size="small" onClick={() => setLoadRemoteImages(true)}>
            Load remote images
          </Button>
        )}
      </div>
      <iframe
        key={String(loadRemoteImages)}
        className="html-body__frame"
        title="HTML body"
        sandbox=""
        referrerPolicy="no-referrer"
        srcDoc={frameDocumentOf(html, loadRemoteImages)}
      />
    </div>
  );
}
