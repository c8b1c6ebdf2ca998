/**
 * The image proxy behind "Load remote images" (docs/console.md §10.10, docs/api.md): an operator asks for one
 * URL of one mail; it is fetched only if the mail's HTML body names it (image-references.ts), and only through
 * the guarded fetcher (net/remote-image-fetcher.ts).
 */
import { AppError, badRequest, notFound } from '../errors.js';
import type { MailService } from '../mail/mail.service.js';
import { RemoteImageError, type RemoteImage, type RemoteImageFailure, type RemoteImageFetcher } from '../net/remote-image-fetcher.js';
import { htmlReferencesUrl } from './image-references.js';

/**
 * The answer to each refusal: 403 for an address the operator's settings forbid, 502 for what the image host
 * did (the proxy is a gateway, and the fault is upstream), each with its own code.
 */
const FAILURE_ANSWERS: Readonly<Record<RemoteImageFailure, { status: number; code: string }>> = {
  address_refused: { status: 403, code: 'image_address_refused' },
  not_an_image: { status: 502, code: 'image_not_an_image' },
  too_large: { status: 502, code: 'image_too_large' },
  timeout: { status: 504, code: 'image_timeout' },
  too_many_redirects: { status: 502, code: 'image_too_many_redirects' },
  bad_redirect: { status: 502, code: 'image_bad_redirect' },
  upstream_status: { status: 502, code: 'image_upstream_status' },
  connection_failed: { status: 502, code: 'image_unreachable' },
};

export function createRemoteImageService({ mails, fetchImage }: { mails: MailService; fetchImage: RemoteImageFetcher }) {
  /** The image `url` of mail `id`'s HTML body, or an AppError saying why not. */
  async function getRemoteImage(id: number, url: string): Promise<RemoteImage> {
    const target = parseImageUrl(url);
    const { html } = await mails.getMailDetail(id);
    if (html === null || !htmlReferencesUrl(html, url)) {
      throw notFound('image_not_in_mail', `query.url does not occur in the HTML body of mail ${id}; only its own images are fetched.`);
    }
    try {
      return await fetchImage(target);
    } catch (error) {
      if (!(error instanceof RemoteImageError)) throw error;
      const answer = FAILURE_ANSWERS[error.reason];
      throw new AppError(answer.status, answer.code, error.message);
    }
  }
  return { getRemoteImage };
}

export type RemoteImageService = ReturnType<typeof createRemoteImageService>;

function parseImageUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest('invalid_url', 'query.url must be an absolute http or https URL.');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw badRequest('invalid_url', `query.url must be an absolute http or https URL, not ${parsed.protocol}.`);
  }
  // A mail that names user:password@host gets no login sent on its behalf.
  if (parsed.username || parsed.password) throw badRequest('invalid_url', 'query.url must not carry a user name or password.');
  return parsed;
}
