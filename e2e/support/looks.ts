/**
 * The looks the console's views are checked and photographed in: light and dark (the system's setting, which the
 * console follows), at 1440×900 and 1024×700 (a wide screen, and the narrow one whose row buttons must still fit).
 * One loop for every spec that walks them.
 */
import type { Page } from '@playwright/test';

export type Scheme = 'light' | 'dark';

export interface Look {
  scheme: Scheme;
  width: number;
  height: number;
}

export const SCHEMES: readonly Scheme[] = ['light', 'dark'];
export const SIZES: readonly (readonly [width: number, height: number])[] = [
  [1440, 900],
  [1024, 700],
];

/** Puts the page in each scheme in turn, at the size it has, and runs `step` in it. */
export async function forEachScheme(page: Page, step: (scheme: Scheme) => Promise<void>): Promise<void> {
  for (const scheme of SCHEMES) {
    await page.emulateMedia({ colorScheme: scheme });
    await step(scheme);
  }
}

/** Puts the page in each look in turn (scheme first, then size) and runs `step` in it. */
export async function forEachLook(page: Page, step: (look: Look) => Promise<void>): Promise<void> {
  await forEachScheme(page, async (scheme) => {
    for (const [width, height] of SIZES) {
      await page.setViewportSize({ width, height });
      await step({ scheme, width, height });
    }
  });
}
