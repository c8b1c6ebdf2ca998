/**
 * The remote images of a mail's HTML body, and the body with them replaced by `data:` URLs the console fetched
 * through the server's image proxy (docs/console.md §10.10). What is read here is what a browser would load
 * from the frame: `<img src>`, `srcset` of `<img>` and `<source>`, the legacy `background` attribute, and CSS
 * `url()` in `style` attributes and `<style>` elements. Anything else (an SVG `<image>`, a video poster) keeps
 * its remote URL, which the frame's `img-src data:` still blocks.
 *
 * The values are read as the browser's parser gives them (character references decoded) and sent to the proxy
 * as they are: the server checks that the mail's HTML names that exact URL (server/src/remote-images/).
 */

/** A mail with more images than this gets the first ones; the rest stay blocked. */
export const MAX_REMOTE_IMAGES = 100;
/** Proxy requests in flight at once for one mail. */
const CONCURRENT_LOADS = 4;

const CSS_URL = /url\(\s*(['"]?)(.*?)\1\s*\)/gi;

const isRemote = (url: string) => /^https?:\/\//i.test(url);

/** Calls `replace` with every remote image URL of `html`, and answers the HTML with the replacements made. */
export function rewriteRemoteImages(html: string, replace: (url: string) => string | undefined): string {
  const document = new DOMParser().parseFromString(html, 'text/html');
  let changed = false;
  const swap = (url: string): string => {
    const trimmed = url.trim();
    const replacement = isRemote(trimmed) ? replace(trimmed) : undefined;
    if (replacement === undefined) return url;
    changed = true;
    return replacement;
  };
  const swapInCss = (css: string) =>
    css.replace(CSS_URL, (whole, quote: string, url: string) => {
      const replaced = swap(url);
      return replaced === url ? whole : `url(${quote}${replaced}${quote})`;
    });
  const rewriteAttribute = (selector: string, attribute: string, rewrite: (value: string) => string) => {
    for (const element of document.querySelectorAll(selector)) {
      const value = element.getAttribute(attribute);
      if (value === null) continue;
      const next = rewrite(value);
      if (next !== value) element.setAttribute(attribute, next);
    }
  };

  rewriteAttribute('img[src]', 'src', swap);
  rewriteAttribute('img[srcset], source[srcset]', 'srcset', (value) => rewriteSrcset(value, swap));
  rewriteAttribute('[background]', 'background', swap);
  rewriteAttribute('[style]', 'style', swapInCss);
  for (const style of document.querySelectorAll('style')) {
    const css = style.textContent;
    const next = swapInCss(css);
    if (next !== css) style.textContent = next;
  }
  // Unchanged HTML goes to the frame as the mail wrote it, not as re-serialized.
  return changed ? document.documentElement.outerHTML : html;
}

/**
 * A `srcset` with each candidate's URL passed through `swap`, read as the HTML standard's parser reads it: a
 * URL is a run of non-space characters (commas inside it, as image CDNs write them, are kept), trailing commas
 * end a candidate, and descriptors run to the next comma.
 */
export function rewriteSrcset(srcset: string, swap: (url: string) => string): string {
  let rewritten = '';
  let rest = srcset;
  while (rest.length > 0) {
    const separator = /^[\s,]*/.exec(rest)![0];
    rewritten += separator;
    rest = rest.slice(separator.length);
    if (rest.length === 0) break;
    const candidate = /^\S+/.exec(rest)![0];
    rest = rest.slice(candidate.length);
    const trailingCommas = /,*$/.exec(candidate)![0];
    rewritten += swap(candidate.slice(0, candidate.length - trailingCommas.length)) + trailingCommas;
    if (trailingCommas === '') {
      const descriptors = /^[^,]*/.exec(rest)![0];
      rewritten += descriptors;
      rest = rest.slice(descriptors.length);
    }
  }
  return rewritten;
}

/** The distinct remote image URLs of `html`, in document order. */
export function listRemoteImageUrls(html: string): string[] {
  const urls = new Set<string>();
  rewriteRemoteImages(html, (url) => {
    urls.add(url);
    return undefined;
  });
  return [...urls];
}

export interface InlinedImages {
  html: string;
  /** Remote images the body names (at most MAX_REMOTE_IMAGES were asked for). */
  total: number;
  failed: number;
  /** Why the first failed one failed, as the server said. */
  firstError: string | undefined;
}

/**
 * Loads every remote image of `html` with `load` (a few at a time) and answers the HTML with each loaded one
 * as its `data:` URL; a failed one keeps its remote URL, which the frame's policy blocks.
 */
export async function inlineRemoteImages(
  html: string,
  load: (url: string) => Promise<string>,
  describeError: (error: unknown) => string,
): Promise<InlinedImages> {
  const urls = listRemoteImageUrls(html);
  const loaded = new Map<string, string>();
  const errors: string[] = [];
  const queue = urls.slice(0, MAX_REMOTE_IMAGES);
  async function worker() {
    for (let url = queue.shift(); url !== undefined; url = queue.shift()) {
      try {
        loaded.set(url, await load(url));
      } catch (error) {
        errors.push(describeError(error));
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENT_LOADS }, worker));
  return {
    html: loaded.size > 0 ? rewriteRemoteImages(html, (url) => loaded.get(url)) : html,
    total: urls.length,
    failed: urls.length - loaded.size,
    firstError: errors[0],
  };
}
