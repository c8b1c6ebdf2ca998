import { Type } from '@sinclair/typebox';

/**
 * Lanes (docs/lanes.md): an application's mail is `transactional` (password resets, receipts: the default) or `bulk`
 * (newsletters, campaigns). The claim serves transactional mail first and keeps a share for bulk, so a bulk send
 * never delays a transactional mail by more than a claim round. The code is what the store keeps.
 */
export const LANES = ['transactional', 'bulk'] as const;
export type Lane = (typeof LANES)[number];
export const LANE_CODES: Readonly<Record<Lane, number>> = { transactional: 0, bulk: 1 };
export const laneOfCode = (code: number): Lane => LANES[code] ?? 'transactional';

/** The SMTP form of a submission's `lane`: read at acceptance and removed from the message. */
export const LANE_HEADER = 'X-Outbox-Lane';

/** A union of literals rather than an enum: the submission's compiled checker (TypeCompiler) knows no Unsafe type. */
export const LaneSchema = Type.Union(
  LANES.map((lane) => Type.Literal(lane)),
  { description: 'transactional (default) or bulk' },
);
