import { Type, type Static } from '@sinclair/typebox';
import { DataOf } from './common.js';

/** docs/console.md §3: username and password, both strings. No length rules: the spec's client does not validate. */
export const LoginRequest = Type.Object(
  {
    username: Type.String({ maxLength: 200 }),
    password: Type.String({ maxLength: 1000 }),
  },
  { additionalProperties: false },
);
export type LoginRequest = Static<typeof LoginRequest>;

export const Session = Type.Object({
  token: Type.String({ description: 'Send as `Authorization: Token {token}`' }),
  username: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
});
export type Session = Static<typeof Session>;

export const LoginResponse = DataOf(Session);
export type LoginResponse = Static<typeof LoginResponse>;

export const LogoutResponse = DataOf(Type.Object({ loggedOut: Type.Boolean() }));
export type LogoutResponse = Static<typeof LogoutResponse>;
