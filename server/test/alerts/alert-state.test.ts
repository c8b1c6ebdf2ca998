/**
 * The alert state machine alone (alert-evaluator.ts `nextState`, pure): the pending period, a condition that
 * clears while pending, the cooldown after a resolution, and a rule that can no longer be measured. The store,
 * the events and the audit entries of the same transitions are in alerts.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { nextState } from '../../src/alerts/alert-evaluator.js';
import type { Measurement } from '../../src/alerts/alert-rules.js';
import type { AlertStateRow } from '../../src/alerts/alerts.repository.js';

const rule = { name: 'failure_rate' as const, pendingMs: 60_000 };
const holds: Measurement = { active: true, value: 0.5, threshold: 0.2, summary: 'holds' };
const clear: Measurement = { active: false, value: 0.1, threshold: 0.2, summary: 'clear' };
const COOLDOWN = 600_000;

/** Runs a series of rounds and answers the states after each, and every transition. */
function run(rounds: Array<[at: number, measured: Measurement | undefined]>, cooldownMs = COOLDOWN) {
  let row: AlertStateRow | undefined;
  const states: string[] = [];
  const moves: string[] = [];
  for (const [at, measured] of rounds) {
    const next = nextState(row, rule, measured, at, cooldownMs);
    row = next.row;
    states.push(row.state);
    for (const t of next.transitions) moves.push(`${t.from}>${t.to}@${at}`);
  }
  return { states, moves, row: row! };
}

describe('alert state machine', () => {
  it('fires once the condition held for the pending period, then stays firing without a new transition', () => {
    const { states, moves, row } = run([
      [0, holds],
      [30_000, holds],
      [60_000, holds],
      [90_000, holds],
    ]);
    expect(states).toEqual(['pending', 'pending', 'firing', 'firing']);
    expect(moves).toEqual(['ok>pending@0', 'pending>firing@60000']);
    expect(row).toMatchObject({ firing_since: 60_000, firings: 1, pending_since: 0 });
  });

  it('a condition that clears while pending goes back to ok, and the pending period starts again', () => {
    const { states } = run([
      [0, holds],
      [30_000, clear],
      [60_000, holds],
      [90_000, holds],
      [120_000, holds],
    ]);
    expect(states).toEqual(['pending', 'ok', 'pending', 'pending', 'firing']);
  });

  it('after resolving, the rule may go pending but does not fire again before the cooldown has passed', () => {
    const { states, moves, row } = run([
      [0, holds],
      [60_000, holds],
      [120_000, clear],
      [150_000, holds],
      [300_000, holds],
      [719_000, holds],
      [720_000, holds],
    ]);
    expect(states).toEqual(['pending', 'firing', 'resolved', 'pending', 'pending', 'pending', 'firing']);
    expect(moves.filter((m) => m.includes('>firing'))).toEqual(['pending>firing@60000', 'pending>firing@720000']);
    expect(row.firings).toBe(2);
  });

  it('a firing rule that can no longer be measured resolves before it turns inactive; a new rule without a measure starts inactive', () => {
    expect(
      run([
        [0, holds],
        [60_000, holds],
        [90_000, undefined],
      ]).moves,
    ).toEqual(['ok>pending@0', 'pending>firing@60000', 'firing>resolved@90000', 'resolved>inactive@90000']);
    expect(run([[0, undefined]])).toMatchObject({ states: ['inactive'], moves: [] });
  });
});
