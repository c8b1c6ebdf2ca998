import { apiRequest } from '../../../lib/api-client';

/**
 * GET /api/v1/mail/{id}/remote-image?url=…: one remote image of the mail's HTML body, fetched by the server
 * (docs/api.md), answered as a `data:` URL for the body's sandboxed frame. Fetched with the token header, since
 * the token never goes into a URL and the frame (sandboxed, an opaque origin) could not send it anyway.
 */
export async function getRemoteImageAsDataUrl(token: string, mailId: number, url: string, signal?: AbortSignal): Promise<string> {
  const response = await apiRequest(`/api/v1/mail/${encodeURIComponent(String(mailId))}/remote-image`, {
    token,
    query: { url },
    ...(signal ? { signal } : {}),
  });
  const type = response.headers.get('content-type') ?? 'application/octet-stream';
  return `data:${type};base64,${base64Of(new Uint8Array(await response.arrayBuffer()))}`;
}

/** Base64 of the bytes, 32 KiB at a time (one String.fromCharCode call per piece stays within argument limits). */
function base64Of(bytes: Uint8Array): string {
  let binary = '';
  for (let start = 0; start < bytes.length; start += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  }
  return btoa(binary);
}
