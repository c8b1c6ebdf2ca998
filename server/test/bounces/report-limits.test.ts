/** capText (docs/bounces.md#limits): within the byte cap, marked, and never a character cut in two. */
import { describe, expect, it } from 'vitest';
import { capText } from '../../src/bounces/report-limits.js';

describe('capText', () => {
  it('keeps a text within the cap as it is', () => {
    expect(capText('550 5.1.1 user unknown', 1024)).toBe('550 5.1.1 user unknown');
    expect(capText('x'.repeat(1024), 1024)).toBe('x'.repeat(1024));
  });

  it('cuts a longer one to at most the cap in UTF-8 bytes, ending in a marker with the whole size', () => {
    const cut = capText('y'.repeat(5000), 1024);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(1024);
    expect(cut).toMatch(/^y+ … \[truncated: 5000 bytes in all\]$/);
  });

  it('never cuts a multi-byte character in two', () => {
    for (const unit of ['é', '€', '😀']) {
      for (let cap = 60; cap < 70; cap++) {
        const text = unit.repeat(100);
        const cut = capText(text, cap);
        expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(cap);
        const kept = cut.slice(0, cut.indexOf(' … [truncated'));
        expect(text.startsWith(kept)).toBe(true);
        expect(kept).not.toContain('\uFFFD');
        expect(cut.endsWith(`[truncated: ${Buffer.byteLength(text)} bytes in all]`)).toBe(true);
      }
    }
  });
});
