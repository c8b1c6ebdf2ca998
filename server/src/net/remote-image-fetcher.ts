/**
 * Fetches one remote image of a mail for the console's "Load remote images" (docs/console.md §10.10), so that
 * the operator's browser never connects to an address a mail names. The mail's author chooses the URL, so
 * every connection is checked like a webhook's (net/address-guard.ts): an IP literal before connecting, a name
 * by the guarded `lookup` the socket connects with, so the address checked is the address connected to (no
 * DNS rebinding between a check and the connection). Redirects are followed by hand, at most `maxRedirects`,
 * and every hop is checked again. One deadline covers the whole fetch, redirects included; the body is cut off
 * past `maxBytes`; only raster image types pass (not SVG: docs/decisions.md#remote-images-in-the-detail-drawer).
 */
import http from 'node:http';
import https from 'node:https';
import { AddressRefusedError, checkLiteralHost, createGuardedLookup, isPublicAddress, type AddressPolicy } from './address-guard.js';

/** The setting that lets the proxy reach loopback, private and link-local addresses. */
export const IMAGE_PROXY_SETTING = 'IMAGE_PROXY_ALLOW_PRIVATE';

/**
 * Raster formats a browser shows in an `<img>`. SVG is left out on purpose: it is a document (scripts, external
 * references, CSS), and the proxy's answers come from the console's own origin.
 */
export const PROXIED_IMAGE_TYPES: ReadonlySet<string> = new Set([
  'image/png',
  'image/apng',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'image/bmp',
  'image/x-icon',
  'image/vnd.microsoft.icon',
]);

export interface RemoteImageFetchOptions {
  /** IMAGE_PROXY_ALLOW_PRIVATE: loopback, private and link-local targets are allowed. */
  allowPrivate: boolean;
  maxBytes: number;
  /** The whole fetch, every redirect and the body included. */
  timeoutMs: number;
  maxRedirects: number;
  /**
   * Replaces the address rule when given (tests: loopback allowed but not link-local, so that a redirect from an
   * allowed image host to a refused address can be shown on one machine). Product code leaves it out.
   */
  isAddressAllowed?: (ip: string) => boolean;
}

export const REMOTE_IMAGE_DEFAULTS = { maxBytes: 5 * 1024 * 1024, timeoutMs: 10_000, maxRedirects: 3 } as const;

export type RemoteImageFailure =
  | 'address_refused'
  | 'not_an_image'
  | 'too_large'
  | 'timeout'
  | 'too_many_redirects'
  | 'bad_redirect'
  | 'upstream_status'
  | 'connection_failed';

/** Why an image was not fetched, with a sentence for the operator. */
export class RemoteImageError extends Error {
  constructor(
    readonly reason: RemoteImageFailure,
    message: string,
  ) {
    super(message);
    this.name = 'RemoteImageError';
  }
}

export interface RemoteImage {
  /** One of PROXIED_IMAGE_TYPES, without parameters. */
  contentType: string;
  body: Buffer;
}

export type RemoteImageFetcher = (url: URL) => Promise<RemoteImage>;

export function createRemoteImageFetcher(options: RemoteImageFetchOptions): RemoteImageFetcher {
  const policy: AddressPolicy = {
    isAllowed: options.isAddressAllowed ?? (options.allowPrivate ? () => true : isPublicAddress),
    setting: IMAGE_PROXY_SETTING,
  };
  const lookup = createGuardedLookup(policy);

  return async function fetchRemoteImage(url: URL): Promise<RemoteImage> {
    const deadline = AbortSignal.timeout(options.timeoutMs);
    let target = url;
    for (let redirects = 0; ; redirects += 1) {
      const answer = await requestOnce(target, deadline);
      if (answer.kind === 'image') return answer.image;
      if (redirects === options.maxRedirects) {
        throw new RemoteImageError('too_many_redirects', `The image host redirected more than ${options.maxRedirects} times.`);
      }
      target = answer.location;
    }
  };

  type HopAnswer = { kind: 'image'; image: RemoteImage } | { kind: 'redirect'; location: URL };

  function requestOnce(target: URL, deadline: AbortSignal): Promise<HopAnswer> {
    return new Promise<HopAnswer>((resolve, reject) => {
      const fail = (error: unknown) => reject(toRemoteImageError(error, deadline, options.timeoutMs));
      try {
        if (target.protocol !== 'http:' && target.protocol !== 'https:') {
          throw new RemoteImageError(
            'bad_redirect',
            `The image host redirected to a ${target.protocol} URL; only http and https are fetched.`,
          );
        }
        checkLiteralHost(target.hostname, policy);
      } catch (error) {
        fail(error);
        return;
      }
      const request = (target.protocol === 'https:' ? https : http).request(target, {
        method: 'GET',
        // A connection of its own, made with the guarded lookup: a pooled socket could have been opened under
        // another policy (the webhooks'), and an image fetch is not frequent enough to need keep-alive.
        agent: false,
        lookup,
        signal: deadline,
        headers: {
          accept: 'image/avif,image/webp,image/apng,image/png,image/jpeg,image/gif,image/*;q=0.5',
          'user-agent': 'Outbox-ImageProxy/1',
        },
      });
      request.on('error', fail);
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 300 && status < 400 && status !== 304) {
          response.resume();
          const location = response.headers.location;
          let next: URL | undefined;
          try {
            next = location ? new URL(location, target) : undefined;
          } catch {
            next = undefined;
          }
          if (!next) fail(new RemoteImageError('bad_redirect', `The image host answered ${status} without a usable Location.`));
          // Node would send them as Authorization: no login goes out on a mail's behalf, as for the URL in the mail.
          else if (next.username || next.password)
            fail(
              new RemoteImageError('bad_redirect', `The image host redirected to a URL with a user name or password; it is not followed.`),
            );
          else resolve({ kind: 'redirect', location: next });
          return;
        }
        const refuse = (reason: RemoteImageFailure, message: string) => {
          response.destroy();
          fail(new RemoteImageError(reason, message));
        };
        if (status !== 200) return refuse('upstream_status', `The image host answered ${status}.`);
        const contentType = (response.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (!PROXIED_IMAGE_TYPES.has(contentType)) {
          return refuse(
            'not_an_image',
            `The image host answered ${contentType || 'no content type'}, not a raster image (SVG is not proxied).`,
          );
        }
        const declared = Number(response.headers['content-length']);
        if (declared > options.maxBytes)
          return refuse('too_large', `The image is ${declared} bytes, more than the ${options.maxBytes} allowed.`);
        const chunks: Buffer[] = [];
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > options.maxBytes) return refuse('too_large', `The image is more than the ${options.maxBytes} bytes allowed.`);
          chunks.push(chunk);
        });
        response.on('error', fail);
        response.on('end', () => {
          if (!response.complete) return fail(new RemoteImageError('connection_failed', 'The image host closed the connection mid-image.'));
          resolve({ kind: 'image', image: { contentType, body: Buffer.concat(chunks) } });
        });
      });
      request.end();
    });
  }
}

function toRemoteImageError(error: unknown, deadline: AbortSignal, timeoutMs: number): RemoteImageError {
  if (error instanceof RemoteImageError) return error;
  if (error instanceof AddressRefusedError) return new RemoteImageError('address_refused', error.message);
  if (deadline.aborted) return new RemoteImageError('timeout', `The image host did not answer within ${timeoutMs} ms.`);
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const detail =
    code === 'ENOTFOUND' || code === 'EAI_AGAIN' ? 'host not found' : code === 'ECONNREFUSED' ? 'connection refused' : (code ?? 'failed');
  return new RemoteImageError('connection_failed', `The image host could not be reached (${detail}).`);
}
