/**
 * The tables as Kysely sees them. Instants are stored as integer milliseconds since the epoch on both
 * engines (sortable, portable, no time-zone surprises); `provider_sent_at` uses 0 for "not sent yet" so
 * that keyset paging on it needs no NULL handling, and the mail service maps 0 back to null.
 *
 * One file, longer than a module here usually is, on purpose: it is Kysely's one `Database` type, a table per
 * interface and nothing else, and test/store/schema-matches-database.test.ts reads it whole against the migrated
 * store on both engines.
 */
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

export interface MailTable {
  id: Generated<number>;
  message_id: string;
  from_name: string;
  from_mail: string;
  subject: string;
  status: number;
  /** Lower-cased sender, recipients and subject, for the list's `q` search. */
  search_text: string;
  received_at: number;
  last_update_at: number;
  provider_sent_at: ColumnType<number, number | undefined, number>;
  next_attempt_at: number;
  attempts: ColumnType<number, number | undefined, number>;
  provider_reply: string | null;
  api_key_id: number | null;
  idempotency_key: string | null;
  /**
   * The first To recipient's address ('' when none), for the list's To sort (migration 003). `insertMails`
   * fills it from the recipients, so callers building a row leave it out.
   */
  first_to_mail: ColumnType<string, string | undefined, string>;
  /** Distinct envelope recipients (migration 005). */
  recipient_count: ColumnType<number, number | undefined, number>;
  /** How many of them the relay refused for good, kept with each outcome (migration 005). */
  rejected_recipients: ColumnType<number, number | undefined, number>;
  /** The mail's last application event's `mail_seq` (migration 006). */
  event_seq: ColumnType<number, number | undefined, number>;
  /** When the submitter asked for it to be sent (`sendAt`, migration 026); null: as soon as it can be. */
  send_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** The lane it was accepted into (LANE_CODES in contract/, migration 027). */
  lane: ColumnType<number, number | undefined, number>;
  /** When the content purge removed its raw message, bodies and attachments; null while kept (migration 025). */
  content_removed_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/**
 * The queue (migration 022): one row per mail that waits or is leased, none for any other. A claim writes only
 * this table; a mail whose row holds a lease (`lease_owner` set) is Processing wherever a status shows
 * (mail/leases.ts), while its record's stored status stays Queued.
 */
export interface MailQueueTable {
  mail_id: number;
  /** When it may be claimed (a retry's backoff, a requeue's now). */
  due_at: number;
  /** Attempts so far, the one under way included (the claim counts it). */
  attempts: ColumnType<number, number | undefined, number>;
  lease_owner: ColumnType<string | null, string | null | undefined, string | null>;
  lease_expires_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** When the current lease began: a Processing mail's last update. */
  leased_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** Whose mail it is (0: no application's) and its lane (LANE_CODES), for the claim's turns (migration 027). */
  api_key_id: number;
  lane: ColumnType<number, number | undefined, number>;
}

/** What the relay last said about one envelope recipient; see store/migrations/005-recipient-outcomes.ts. */
/** `bounced` and `complained` are set after the relay's 250, by a report that came back (bounces/); `suppressed`: never sent, the address is on the suppression list (suppression/). */
export type RecipientOutcome = 'pending' | 'accepted' | 'rejected' | 'deferred' | 'bounced' | 'complained' | 'suppressed';

export interface MailRecipientTable {
  id: Generated<number>;
  mail_id: number;
  /** 'to' | 'cc' | 'bcc' | 'envelope' (an SMTP RCPT TO not named in the headers) */
  kind: string;
  position: number;
  name: string;
  address: string;
  /** Envelope rows: RecipientOutcome; null on header rows and on mails finished before migration 005. */
  outcome: ColumnType<RecipientOutcome | null, RecipientOutcome | null | undefined, RecipientOutcome | null>;
  /** The relay's last answer for this recipient. */
  reply: ColumnType<string | null, string | null | undefined, string | null>;
  updated_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/** PostgreSQL only (migration 031): each mail's search text and punctuation windows (punctuation-keys.ts) with their
 * trigram indexes, written once with the mail, apart from `mails` so that a delivery's update of the record does not
 * write trigrams. */
export interface MailSearchTable {
  mail_id: number;
  /** The same text as the mail's `search_text`. */
  search_text: string;
  keys: string;
}

export interface MailContentTable {
  mail_id: number;
  /** The message as it goes to the provider (RFC 5322, as received over SMTP or as built from JSON). */
  raw: Buffer | null;
  text_body: string | null;
  html_body: string | null;
  /** JSON object of extra headers given at submission over HTTP. */
  headers_json: string | null;
  envelope_from: string;
  size_bytes: number;
}

export interface MailEventTable {
  id: Generated<number>;
  mail_id: number;
  at: number;
  /** Who made it happen: `operator:NAME`, `worker:ID`, `api-key:NAME`, `system`. */
  actor: string;
  type: string;
  from_status: number | null;
  to_status: number | null;
  /** JSON object with what else is worth keeping (SMTP reply, duration, reason). */
  detail: string | null;
}

/** An application event (the transactional outbox of webhooks); see store/migrations/006-application-events.ts. */
export interface ApplicationEventTable {
  seq: Generated<number>;
  /** `evt_…`, stable: the `webhook-id` of every delivery of this event. */
  id: string;
  type: string;
  mail_id: number | null;
  mail_seq: number | null;
  api_key_id: number | null;
  created_at: number;
  /** JSON of the event's `data` object. */
  payload: string;
  fanned_out_at: ColumnType<number | null, number | null | undefined, number | null>;
}

/** A webhook endpoint; see store/migrations/007-webhooks.ts. */
export interface WebhookEndpointTable {
  id: Generated<number>;
  url: string;
  description: string;
  /** JSON array of application event types; `[]`: every type. */
  event_types: string;
  /** One application's (API key's) events only; null: every application. */
  api_key_id: number | null;
  /** 1 or 0. */
  enabled: number;
  /** 'operator' | 'gone' | 'failing' while disabled. */
  disabled_reason: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  failing_since: number | null;
  created_at: number;
  updated_at: number;
}

/** One application event owed to one endpoint; see store/migrations/007-webhooks.ts. */
export interface WebhookDeliveryTable {
  id: Generated<number>;
  endpoint_id: number;
  event_seq: number;
  event_id: string;
  event_type: string;
  mail_id: number | null;
  /** 'pending' | 'retrying' | 'succeeded' | 'failed' */
  state: string;
  step: ColumnType<number, number | undefined, number>;
  next_attempt_at: number | null;
  lease_owner: string | null;
  created_at: number;
  updated_at: number;
}

/** One HTTP attempt of a delivery. */
export interface WebhookAttemptTable {
  id: Generated<number>;
  delivery_id: number;
  endpoint_id: number;
  at: number;
  http_status: number | null;
  duration_ms: number;
  response: string;
  error: string | null;
  /** 1 or 0. */
  succeeded: number;
}

export interface StatusCountTable {
  status: number;
  count: number;
}

export interface OperatorTable {
  id: Generated<number>;
  username: string;
  password_hash: string;
  created_at: number;
  updated_at: number;
}

export interface SessionTable {
  token_hash: string;
  operator_id: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

/** An application (migrations 001 and 023). */
export interface ApiKeyTable {
  id: Generated<number>;
  name: string;
  key_hash: string;
  created_at: number;
  revoked_at: number | null;
  /** The application's lane (LANE_CODES in contract/, migration 027). */
  lane: ColumnType<number, number | undefined, number>;
  /** Days its mails' content is kept once final (0: removed at once); null follows CONTENT_RETENTION_DAYS (migration 025). */
  content_retention_days: ColumnType<number | null, number | null | undefined, number | null>;
  /** `operator:NAME`, `cli`, …; null for keys made before migration 023. */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** Written at most once a minute per key (auth/auth.service.ts). */
  last_used_at: ColumnType<number | null, number | null | undefined, number | null>;
  /** A rotation's old key, accepted until `previous_key_expires_at`. */
  previous_key_hash: ColumnType<string | null, string | null | undefined, string | null>;
  previous_key_expires_at: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface AuditLogTable {
  id: Generated<number>;
  at: number;
  actor: string;
  action: string;
  target: string | null;
  before_json: string | null;
  after_json: string | null;
}

/** A process's heartbeat (migration 008); see server/src/instances/. */
export interface InstanceTable {
  id: string;
  host: string;
  pid: number;
  version: string;
  /** Comma-separated roles: api, worker, smtp, bounce. */
  roles: string;
  started_at: number;
  last_heartbeat_at: number;
  stale_after_ms: number;
  in_flight: number | null;
  delivered_last_minute: number | null;
}

/** A named secret shared by every instance (migration 011): `return-path` keys the bounce address's HMAC. */
export interface ServerSecretTable {
  name: string;
  value: string;
  created_at: number;
}

/** A report the bounce listener accepted (migration 011). */
export interface BounceReportTable {
  id: Generated<number>;
  received_at: number;
  envelope_from: string;
  envelope_to: string;
  /** 'dsn' (RFC 3464) | 'arf' (RFC 5965 complaint) | 'unknown' */
  kind: string;
  /** The mail it was matched to; null while unmatched. */
  mail_id: number | null;
  /** 'return-path' | 'message-id' | null */
  matched_by: string | null;
  /** JSON of the parsed report (per recipient: action, status, diagnostic, final recipient). */
  summary: string;
  raw: Buffer;
}

/** An address not sent to (migration 011). */
export interface SuppressionTable {
  id: Generated<number>;
  /** Lower-cased. */
  address: string;
  /** 'hard_bounce' | 'rcpt_refused' | 'complaint' | 'manual' */
  reason: string;
  mail_id: number | null;
  /** The reply or report line that caused it. */
  detail: string | null;
  note: string | null;
  /** `operator:NAME`, `bounce`, `worker`, `cli` */
  created_by: string;
  created_at: number;
  expires_at: number | null;
}

/** Alert rules' state, one row per rule (migration 013). */
export interface AlertStateTable {
  rule: string;
  state: string;
  since: number;
  pending_since: number | null;
  firing_since: number | null;
  resolved_at: number | null;
  value: number | null;
  threshold: number;
  summary: string;
  evaluated_at: number;
  firings: ColumnType<number, number | undefined, number>;
}

/** Every alert transition (migration 013). */
export interface AlertHistoryTable {
  id: Generated<number>;
  rule: string;
  from_state: string;
  to_state: string;
  at: number;
  value: number | null;
  threshold: number;
  summary: string;
}

/**
 * Hourly counters per application (migration 024): `application_id` is the API key's id, 0 for mails no key submitted,
 * -1 for every application together; `hour` the hour's first millisecond (UTC); latency_00 … latency_19 the
 * accepted → ProviderSent histogram (contract's LATENCY_BUCKET_BOUNDS_MS).
 */
export interface StatisticsHourlyTable {
  id: Generated<number>;
  application_id: number;
  hour: number;
  accepted: Generated<number>;
  sent: Generated<number>;
  deferred: Generated<number>;
  failed: Generated<number>;
  bounced: Generated<number>;
  complained: Generated<number>;
  suppressed: Generated<number>;
  dequeued: Generated<number>;
  latency_00: Generated<number>;
  latency_01: Generated<number>;
  latency_02: Generated<number>;
  latency_03: Generated<number>;
  latency_04: Generated<number>;
  latency_05: Generated<number>;
  latency_06: Generated<number>;
  latency_07: Generated<number>;
  latency_08: Generated<number>;
  latency_09: Generated<number>;
  latency_10: Generated<number>;
  latency_11: Generated<number>;
  latency_12: Generated<number>;
  latency_13: Generated<number>;
  latency_14: Generated<number>;
  latency_15: Generated<number>;
  latency_16: Generated<number>;
  latency_17: Generated<number>;
  latency_18: Generated<number>;
  latency_19: Generated<number>;
}

/** A named relay (migration 029, docs/relays.md); its login is in `relay_credentials`, never here. */
export interface RelayTable {
  id: Generated<number>;
  name: string;
  /** smtp:// or smtps://, host and port only. */
  url: string;
  /** 'require' | 'opportunistic' | 'off'. */
  tls: string;
  max_connections: number;
  max_per_second: number | null;
  max_per_day: number | null;
  created_at: number;
  updated_at: number;
}

/** A relay's login, kept apart from its URL so that no read of `relays` shows it; not exported. */
export interface RelayCredentialTable {
  relay_id: number;
  username: string;
  password: string;
}

/** One rule of the ordered routes (migration 029): null match fields match anything. */
export interface RouteTable {
  id: Generated<number>;
  position: number;
  api_key_id: number | null;
  sender_domain: string | null;
  recipient_domain: string | null;
  /** 0 transactional, 1 bulk, null any. */
  lane: number | null;
  /** JSON array of relay ids, the primary first; 0 is the default relay (RELAY_URL). */
  relay_ids: string;
  created_at: number;
}

/** One worker process's view of one relay (migration 030; relays/relay-health.ts): rewritten with its heartbeat. */
export interface RelayHealthTable {
  instance_id: string;
  /** The relay's name; `default` for RELAY_URL (or the capture relay). */
  relay: string;
  /** 'up' | 'throttled' | 'down' | 'idle'. */
  state: string;
  since: number | null;
  rate_per_second: number | null;
  max_per_second: number | null;
  sent_today: number;
  max_per_day: number | null;
  last_error: string | null;
  last_error_at: number | null;
  latency_ms: number | null;
  updated_at: number;
}

export interface Database {
  mails: MailTable;
  mail_queue: MailQueueTable;
  mail_recipients: MailRecipientTable;
  mail_contents: MailContentTable;
  mail_search: MailSearchTable;
  mail_events: MailEventTable;
  application_events: ApplicationEventTable;
  status_counts: StatusCountTable;
  operators: OperatorTable;
  sessions: SessionTable;
  api_keys: ApiKeyTable;
  audit_log: AuditLogTable;
  instances: InstanceTable;
  server_secrets: ServerSecretTable;
  bounce_reports: BounceReportTable;
  suppressions: SuppressionTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_attempts: WebhookAttemptTable;
  alert_states: AlertStateTable;
  alert_history: AlertHistoryTable;
  statistics_hourly: StatisticsHourlyTable;
  relays: RelayTable;
  relay_credentials: RelayCredentialTable;
  routes: RouteTable;
  relay_health: RelayHealthTable;
}

export type MailRow = Selectable<MailTable>;
export type MailQueueRow = Selectable<MailQueueTable>;
export type NewMailRow = Insertable<MailTable>;
export type MailUpdate = Updateable<MailTable>;
export type MailRecipientRow = Selectable<MailRecipientTable>;
export type NewMailRecipientRow = Insertable<MailRecipientTable>;
export type MailEventRow = Selectable<MailEventTable>;
export type ApplicationEventRow = Selectable<ApplicationEventTable>;
export type NewApplicationEventRow = Insertable<ApplicationEventTable>;
export type OperatorRow = Selectable<OperatorTable>;
export type SessionRow = Selectable<SessionTable>;
export type ApiKeyRow = Selectable<ApiKeyTable>;
export type RelayRow = Selectable<RelayTable>;
export type RouteRow = Selectable<RouteTable>;
export type RelayHealthRow = Selectable<RelayHealthTable>;
export type InstanceRow = Selectable<InstanceTable>;
export type BounceReportRow = Selectable<BounceReportTable>;
export type SuppressionRow = Selectable<SuppressionTable>;
export type WebhookEndpointRow = Selectable<WebhookEndpointTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptTable>;
