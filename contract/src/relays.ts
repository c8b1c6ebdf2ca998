/**
 * Named relays and routes (docs/relays.md): operators manage the providers
 * Outbox delivers to and the ordered rules that pick one for each mail, with fallbacks. A relay's login is
 * write-only: never answered, never in the audit log, never in an export.
 */
import { Type, type Static } from '@sinclair/typebox';
import { LaneSchema } from './lanes.js';

/** Letters, digits and `. _ -`, like an application's name; `default` is RELAY_URL's. */
export const RELAY_NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** The name routes use for the default relay: RELAY_URL, or the capture relay without it. */
export const DEFAULT_RELAY_NAME = 'default';
export const MAX_RELAY_CONNECTIONS = 100;
export const MAX_ROUTES = 1_000;
/** A route tries at most this many relays: the primary and its fallbacks. */
export const MAX_ROUTE_RELAYS = 10;

export const RELAY_TLS_MODES = ['require', 'opportunistic', 'off'] as const;
export type RelayTlsMode = (typeof RELAY_TLS_MODES)[number];
const RelayTls = Type.Union(
  RELAY_TLS_MODES.map((mode) => Type.Literal(mode)),
  { description: 'STARTTLS policy, as RELAY_TLS: require, opportunistic or off' },
);

export const Relay = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  url: Type.String({ description: 'smtp://host:port or smtps://host:port; never with its login' }),
  tls: RelayTls,
  /** Whether a login is set; the login itself is never answered. */
  hasCredentials: Type.Boolean(),
  maxConnections: Type.Integer(),
  maxPerSecond: Type.Union([Type.Integer(), Type.Null()], { description: 'Messages per second per worker process; null: no limit' }),
  maxPerDay: Type.Union([Type.Integer(), Type.Null()], { description: 'Messages per UTC day per worker process; null: no limit' }),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type Relay = Static<typeof Relay>;

const RelayName = Type.String({ minLength: 1, maxLength: 64, description: 'Letters, digits and . _ - (1 to 64); not "default"' });
const RelayUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'smtp:// or smtps://; a login in it (smtp://user:pass@host) is taken out and kept as the credentials',
});
const Credentials = Type.Object(
  { username: Type.String({ minLength: 1, maxLength: 512 }), password: Type.String({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false, description: 'The login; write-only' },
);
const MaxConnections = Type.Integer({ minimum: 1, maximum: MAX_RELAY_CONNECTIONS, description: 'Connections kept open (default 5)' });
const MaxPerSecond = Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()]);
const MaxPerDay = Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000_000 }), Type.Null()]);

export const CreateRelayBody = Type.Object(
  {
    name: RelayName,
    url: RelayUrl,
    tls: Type.Optional(RelayTls),
    credentials: Type.Optional(Credentials),
    maxConnections: Type.Optional(MaxConnections),
    maxPerSecond: Type.Optional(MaxPerSecond),
    maxPerDay: Type.Optional(MaxPerDay),
  },
  { additionalProperties: false },
);
export type CreateRelayBody = Static<typeof CreateRelayBody>;

export const UpdateRelayBody = Type.Object(
  {
    name: Type.Optional(RelayName),
    url: Type.Optional(RelayUrl),
    tls: Type.Optional(RelayTls),
    credentials: Type.Optional(Type.Union([Credentials, Type.Null()], { description: 'The new login; null removes it' })),
    maxConnections: Type.Optional(MaxConnections),
    maxPerSecond: Type.Optional(MaxPerSecond),
    maxPerDay: Type.Optional(MaxPerDay),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpdateRelayBody = Static<typeof UpdateRelayBody>;

const DomainPattern = Type.Union(
  [Type.String({ minLength: 1, maxLength: 255, description: 'A domain, or *.domain for any of its subdomains' }), Type.Null()],
  { description: 'null: any' },
);

export const RouteMatch = Type.Object(
  {
    /** An application's id (GET /api/v1/applications); null: any. */
    application: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
    senderDomain: Type.Optional(DomainPattern),
    /** Matched against the mail's first envelope recipient. */
    recipientDomain: Type.Optional(DomainPattern),
    lane: Type.Optional(Type.Union([LaneSchema, Type.Null()])),
  },
  { additionalProperties: false },
);
export type RouteMatch = Static<typeof RouteMatch>;

export const RouteInput = Type.Object(
  {
    match: RouteMatch,
    relays: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
      minItems: 1,
      maxItems: MAX_ROUTE_RELAYS,
      description: 'Relay names, the primary first, then its fallbacks in order; "default" is RELAY_URL',
    }),
  },
  { additionalProperties: false },
);
export type RouteInput = Static<typeof RouteInput>;

export const Route = Type.Object({
  id: Type.Integer(),
  position: Type.Integer({ description: 'From 0: the first matching route wins' }),
  match: Type.Object({
    application: Type.Union([Type.Integer(), Type.Null()]),
    senderDomain: Type.Union([Type.String(), Type.Null()]),
    recipientDomain: Type.Union([Type.String(), Type.Null()]),
    lane: Type.Union([LaneSchema, Type.Null()]),
  }),
  relays: Type.Array(Type.String()),
});
export type Route = Static<typeof Route>;

export const PutRoutesBody = Type.Object(
  { routes: Type.Array(RouteInput, { maxItems: MAX_ROUTES, description: 'Every route, in order; replaces the list' }) },
  { additionalProperties: false },
);
export type PutRoutesBody = Static<typeof PutRoutesBody>;

/**
 * A relay's health as the workers see it (docs/relays.md#health): each worker process
 * publishes what it saw of each relay it sends through (on a change at once, and its figures with each heartbeat);
 * `GET /api/v1/relays/health` folds the live workers' reports into one line per relay, the default one included.
 */
export const RELAY_STATES = ['up', 'throttled', 'down', 'idle'] as const;
/**
 * `up`: its last answers were clean; `throttled`: it answered a throttling reply (421/450/454 naming a rate or too
 * many connections) and its rate is lowered; `down`: unreachable or deferring everything, its mails go to the
 * next relay of their route; `idle`: no live worker has sent through it since it started.
 */
export type RelayState = (typeof RELAY_STATES)[number];

export const RelayHealth = Type.Object({
  relay: Type.String({ description: 'The relay name; "default" is RELAY_URL (or the capture relay)' }),
  state: Type.Unsafe<RelayState>({ type: 'string', enum: [...RELAY_STATES], description: 'The worst any live worker reports' }),
  since: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When it entered that state' }),
  ratePerSecond: Type.Union([Type.Number(), Type.Null()], {
    description: 'The rate the workers send to it now, summed over live workers; null: no limit set and none learned',
  }),
  maxPerSecond: Type.Union([Type.Integer(), Type.Null()], { description: 'Its configured rate per worker process' }),
  sentToday: Type.Integer({ description: 'Messages it took this UTC day, summed over live workers' }),
  maxPerDay: Type.Union([Type.Integer(), Type.Null()], { description: 'Its daily quota per worker process' }),
  quotaUsed: Type.Union([Type.Number(), Type.Null()], {
    description: 'The largest share of its daily quota any one worker used today (0..1); null without a quota',
  }),
  lastError: Type.Union([Type.String(), Type.Null()], { description: 'The last reply that was not a 2xx, or why it could not be reached' }),
  lastErrorAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  latencyMs: Type.Union([Type.Number(), Type.Null()], { description: 'Median time of its recent sends, connection to reply' }),
  workers: Type.Integer({ description: 'Live workers that reported on it' }),
});
export type RelayHealth = Static<typeof RelayHealth>;
