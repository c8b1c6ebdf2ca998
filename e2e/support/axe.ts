/**
 * axe-core (@axe-core/playwright, an e2e devDependency) on the console: the violations a spec fails on, each as
 * "id (impact): N × the first node's selector". One home for how the suite runs axe.
 */
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';

/** One axe run takes seconds on a loaded machine; one that has not ended in a minute is a page that stopped answering. */
const AXE_RUN_DEADLINE_MS = 60_000;

export interface AxeScope {
  /** A CSS selector: only what it matches is checked (e.g. `[role="dialog"]`). The whole page by default. */
  include?: string;
  /** The impacts that count: serious and critical by default, or every violation. */
  impacts?: 'serious' | 'all';
}

/**
 * Runs axe on the page as it is and returns the violations that count (none: `toEqual([])`).
 *
 * Two choices make a run cheaper without checking less. axe is asked to detail violations only
 * (`resultTypes`): it still runs every rule on every node, but no longer builds a selector for each node that
 * passed. And on a page without frames it runs in the page itself (`axe.run`, what @axe-core/playwright calls
 * legacy mode): its default gathers each frame's results and finishes them in a new blank page, a renderer of its
 * own that compiles axe again, which took about half of a dialog's run here (13.5 → 7.5 s at load 22) and two
 * thirds of a whole page's (39 → 12.6 s). A page with a frame (the drawer's sandboxed message) keeps the default,
 * which reaches into the frame from the outside.
 */
export async function axeViolations(page: Page, { include, impacts = 'serious' }: AxeScope = {}): Promise<string[]> {
  let builder = new AxeBuilder({ page }).options({ resultTypes: ['violations'] });
  if (include !== undefined) builder = builder.include(include);
  if (page.frames().length === 1) builder = builder.setLegacyMode();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`axe-core did not finish within ${AXE_RUN_DEADLINE_MS / 1000} s: the page stopped answering evaluate`)),
      AXE_RUN_DEADLINE_MS,
    );
  });
  const analysis = builder.analyze();
  // Past the deadline the analysis still ends, in an error once the page is closed: nobody waits for it then.
  analysis.catch(() => undefined);
  const results = await Promise.race([analysis, deadline]).finally(() => clearTimeout(timer));
  return results.violations
    .filter((violation) => impacts === 'all' || violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id} (${violation.impact}): ${violation.nodes.length} × ${violation.nodes[0]?.target.join(' ')}`);
}
