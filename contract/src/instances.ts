import { Type, type Static } from '@sinclair/typebox';

/**
 * What a process does. `api`: serves HTTP (the API and the console); `worker`: delivers mail; `smtp`: takes
 * submissions over SMTP; `bounce`: reads bounce reports (once that listener exists).
 */
export const INSTANCE_ROLES = ['api', 'worker', 'smtp', 'bounce'] as const;
export type InstanceRole = (typeof INSTANCE_ROLES)[number];

/** `GET /api/v1/instances`: one running (or lately running) Outbox process, from its heartbeat row. */
export const Instance = Type.Object({
  id: Type.String({ description: 'Random per process start; a restarted process is a new instance' }),
  host: Type.String({ description: 'The host name the process runs on' }),
  pid: Type.Integer({ description: 'Its process id on that host' }),
  version: Type.String({ description: 'The Outbox version it runs' }),
  roles: Type.Array(Type.Unsafe<InstanceRole>({ type: 'string', enum: [...INSTANCE_ROLES] }), {
    description: 'What it does: api, worker, smtp, bounce',
  }),
  startedAt: Type.String({ format: 'date-time' }),
  lastHeartbeatAt: Type.String({ format: 'date-time' }),
  heartbeatAgeSeconds: Type.Number({ description: 'Seconds since its last heartbeat, as the answering server sees it' }),
  staleAfterSeconds: Type.Number({ description: 'It is stale once its last heartbeat is older than this (15 s by default)' }),
  state: Type.Unsafe<'live' | 'stale'>({
    type: 'string',
    enum: ['live', 'stale'],
    description: 'live: heartbeats arrive; stale: none for staleAfterSeconds, so it stopped without saying so (crash, kill, lost store)',
  }),
  inFlight: Type.Union([Type.Integer(), Type.Null()], { description: 'A worker: sends under way at its last heartbeat; null otherwise' }),
  deliveredLastMinute: Type.Union([Type.Integer(), Type.Null()], {
    description: 'A worker: mails the relay accepted from it in the minute before its last heartbeat; null otherwise',
  }),
});
export type Instance = Static<typeof Instance>;

export const InstancesResponse = Type.Object({
  data: Type.Array(Instance, { description: 'Live ones first, then stale; each group newest start first' }),
  meta: Type.Object({
    at: Type.String({ format: 'date-time', description: 'When the answering server read them' }),
    liveInstances: Type.Integer(),
    liveWorkers: Type.Integer({ description: 'Live instances with the worker role; 0 means no mail is being delivered' }),
  }),
});
export type InstancesResponse = Static<typeof InstancesResponse>;
