/**
 * Hands an API answer to the browser as a file to save. Downloads are fetched with the token header (a plain
 * link could not carry it, and the token never goes into a URL), so the body arrives here as a Blob first.
 */
export async function saveDownload(response: Response, filename: string): Promise<void> {
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked a moment later: the download has started from the object URL by then.
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
