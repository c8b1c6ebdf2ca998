/**
 * Beyond the spec: the console's files are served precompressed (brotli, else gzip), so the browser
 * fetches about a third of the script's bytes. Prints the figure it measured.
 */
import { expect, test } from '../support/fixtures';

const GOAL_BYTES = 150 * 1024;

test.describe('Static files', () => {
  // What a browser that has not loaded the console before fetches: a context of its own, not the worker's shared
  // one, whose renderer may hold the script in its memory cache (support/fixtures.ts).
  test.use({ ownContext: true });

  test('Beyond the spec: the console script is sent brotli-compressed, under 150 KB on the wire', async ({ page, request }) => {
    const scripts: { url: string; encoding: string | undefined }[] = [];
    page.on('response', (response) => {
      if (response.url().endsWith('.js')) scripts.push({ url: response.url(), encoding: response.headers()['content-encoding'] });
    });
    await page.goto('/');
    await expect(page.getByRole('heading', { name: 'LOGIN', exact: true })).toBeVisible();
    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) expect(script.encoding, script.url).toBe('br');
    const sizes = await page.evaluate(() =>
      performance
        .getEntriesByType('resource')
        .filter((entry) => entry.name.endsWith('.js'))
        .map((entry) => ({
          transferred: (entry as PerformanceResourceTiming).encodedBodySize,
          decoded: (entry as PerformanceResourceTiming).decodedBodySize,
        })),
    );
    const transferred = sizes.reduce((sum, size) => sum + size.transferred, 0);
    const decoded = sizes.reduce((sum, size) => sum + size.decoded, 0);
    console.log(`console JS: ${transferred} bytes transferred (brotli), ${decoded} bytes decoded`);
    expect(transferred).toBeLessThanOrEqual(GOAL_BYTES);

    // A client that only takes gzip gets gzip; one that takes nothing gets the plain file.
    const path = new URL(scripts[0]!.url).pathname;
    const gzip = await request.get(path, { headers: { 'Accept-Encoding': 'gzip' } });
    expect(gzip.headers()['content-encoding']).toBe('gzip');
    const plain = await request.get(path, { headers: { 'Accept-Encoding': 'identity' } });
    expect(plain.headers()['content-encoding']).toBeUndefined();
    expect((await plain.body()).length).toBe(decoded);
  });
});
