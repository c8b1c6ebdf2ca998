import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** Every error body: `{ error: { code, message } }` (docs/api.md#answers-and-errors). */
export const ErrorBody = Type.Object({
  error: Type.Object({
    code: Type.String({ description: 'snake_case machine code, e.g. invalid_credentials' }),
    message: Type.String({ description: 'A sentence for a person; names the field when input was bad' }),
  }),
});
export type ErrorBody = Static<typeof ErrorBody>;

/** Every success body wraps its items in `data` (docs/console.md §3). */
export function DataOf<T extends TSchema>(item: T) {
  return Type.Object({ data: Type.Array(item) });
}

/** ISO 8601 UTC instant, or null where the event has not happened. */
export const Instant = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

/**
 * Ids are written in plain decimal (the server refuses `0x10`, `+1`, `1e3`) and stay within what a JSON
 * number holds exactly, which is also within both stores' 64-bit id columns.
 */
export const IdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The mail id' }),
});
export type IdParams = Static<typeof IdParams>;
