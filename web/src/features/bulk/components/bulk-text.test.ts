import { describe, expect, it } from 'vitest';
import { actionsFor, movingText, outcomeText, skippedText } from './bulk-text';

describe('bulk texts', () => {
  it('says what moved and what was skipped, and why', () => {
    expect(outcomeText({ action: 'dequeue', done: 48, skipped: [{ reason: 'processing', count: 2, ids: [1, 2] }] })).toBe(
      '48 dequeued · 2 skipped: already Processing',
    );
    expect(outcomeText({ action: 'requeue', done: 1200, skipped: [] })).toBe('1,200 requeued');
    expect(
      outcomeText({
        action: 'delete',
        done: 3,
        skipped: [
          { reason: 'queued', count: 3, ids: [] },
          { reason: 'not_found', count: 1, ids: [] },
        ],
      }),
    ).toBe('3 deleted · 4 skipped: 3 still Queued, 1 no longer exists');
    expect(skippedText('dequeue', [])).toBe('');
  });

  it('names a requeue refused because content retention removed the message', () => {
    expect(
      outcomeText({
        action: 'requeue',
        done: 5,
        skipped: [
          { reason: 'content_removed', count: 2, ids: [7, 9] },
          { reason: 'provider_sent', count: 1, ids: [3] },
        ],
      }),
    ).toBe('5 requeued · 3 skipped: 2 content removed, 1 already ProviderSent');
  });

  it('offers the actions some selected status allows', () => {
    expect(actionsFor([0])).toEqual(['dequeue']);
    expect(actionsFor([2])).toEqual([]);
    expect(actionsFor([3])).toEqual(['delete']);
    expect(actionsFor([0, 4])).toEqual(['dequeue', 'requeue', 'delete']);
    expect(
      movingText([
        { reason: 'provider_error', count: 3 },
        { reason: 'dequeued', count: 1 },
      ]),
    ).toBe('3 ProviderError, 1 Dequeued');
  });
});
