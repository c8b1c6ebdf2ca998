/** The group-commit scheduler alone: grouping, the weight bound, failure handling, nothing left behind. */
import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../src/store/group-commit.js';

const immediately = () => Promise.resolve();

describe('createGroupCommit', () => {
  it('takes every waiting item into one group, within the weight bound, and answers each in order', async () => {
    const groups: number[][] = [];
    const commit = createGroupCommit<number, number>({
      commit: async (items) => {
        groups.push(items);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return items.map((n) => n * 10);
      },
      gather: immediately,
      maxGroupWeight: 3,
      splitOnFailure: false,
    });
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => commit.submit(n)));
    expect(results).toEqual([10, 20, 30, 40, 50]);
    expect(groups).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('splitOnFailure: one spoiling item fails alone, the others of its group commit', async () => {
    const commit = createGroupCommit<number, number>({
      commit: async (items) => {
        if (items.includes(2)) throw new Error('unique violation');
        return items;
      },
      gather: immediately,
      maxGroupWeight: 10,
      splitOnFailure: true,
    });
    const settled = await Promise.allSettled([1, 2, 3].map((n) => commit.submit(n)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });

  it('without splitOnFailure the whole group fails together', async () => {
    const commit = createGroupCommit<number, number>({
      commit: async () => {
        throw new Error('store down');
      },
      gather: () => new Promise((resolve) => setTimeout(resolve, 1)),
      maxGroupWeight: 10,
      splitOnFailure: false,
    });
    const settled = await Promise.allSettled([1, 2, 3].map((n) => commit.submit(n)));
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });

  it('an item submitted as a commit resolves (from its continuation) is not left behind', async () => {
    const commit = createGroupCommit<number, number>({
      commit: async (items) => items,
      gather: immediately,
      maxGroupWeight: 10,
      splitOnFailure: false,
    });
    let chain = 0;
    const next = async (n: number): Promise<void> => {
      await commit.submit(n);
      chain += 1;
      if (n < 20) await next(n + 1);
    };
    await next(1);
    expect(chain).toBe(20);
    await commit.idle();
    expect(commit.queued).toBe(0);
  });

  /** Submits 1..20 a millisecond apart to a commit of 15 ms; tells the most commits that ran at once. */
  async function overlapOf(maxConcurrentCommits: number | undefined) {
    let now = 0;
    let most = 0;
    const committed: number[] = [];
    const commit = createGroupCommit<number, number>({
      commit: async (items) => {
        now += 1;
        most = Math.max(most, now);
        await new Promise((resolve) => setTimeout(resolve, 15));
        now -= 1;
        committed.push(...items);
        return items.map((n) => -n);
      },
      gather: immediately,
      maxGroupWeight: 100,
      splitOnFailure: false,
      ...(maxConcurrentCommits === undefined ? {} : { maxConcurrentCommits }),
    });
    const answers: Array<Promise<number>> = [];
    for (let n = 1; n <= 20; n++) {
      answers.push(commit.submit(n));
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(await Promise.all(answers)).toEqual(Array.from({ length: 20 }, (_, i) => -(i + 1)));
    await commit.idle();
    expect(committed.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(commit.queued).toBe(0);
    return most;
  }

  it('maxConcurrentCommits: a group gathered while another commits is sent at once, never more than allowed', async () => {
    expect(await overlapOf(2)).toBe(2);
    expect(await overlapOf(3)).toBeGreaterThanOrEqual(2);
    expect(await overlapOf(3)).toBeLessThanOrEqual(3);
  });

  it('by default one commit at a time (SQLite: one connection), items arriving meanwhile wait for the next group', async () => {
    expect(await overlapOf(undefined)).toBe(1);
  });
});
