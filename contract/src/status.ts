/**
 * The mail status table of docs/console.md §4 / docs/lifecycle.md §1: the one place that names codes, names, colours and
 * which console action a status offers. Server and console both read it.
 */
export const MailStatus = {
  Queued: 0,
  Dequeued: 1,
  Processing: 2,
  ProviderSent: 3,
  ProviderError: 4,
  Error: 5,
} as const;

export type MailStatusName = keyof typeof MailStatus;
export type MailStatusCode = (typeof MailStatus)[MailStatusName];

export type StatusColour = 'yellow' | 'green' | 'red';
export type RowAction = 'Dequeue' | 'Delete' | null;

export interface StatusInfo {
  code: MailStatusCode;
  name: MailStatusName;
  colour: StatusColour;
  /** The hex the console paints the round icon with (docs/console.md §10.8). */
  hex: string;
  /** The button of the unnamed action column (docs/console.md §4). */
  action: RowAction;
}

const hexOf: Record<StatusColour, string> = { yellow: '#F5B700', green: '#2E9D4F', red: '#D64545' };

function info(name: MailStatusName, colour: StatusColour, action: RowAction): StatusInfo {
  return { code: MailStatus[name], name, colour, hex: hexOf[colour], action };
}

/** Indexed by status code. */
export const STATUSES: readonly StatusInfo[] = [
  info('Queued', 'yellow', 'Dequeue'),
  info('Dequeued', 'yellow', 'Delete'),
  info('Processing', 'yellow', null),
  info('ProviderSent', 'green', 'Delete'),
  info('ProviderError', 'red', 'Delete'),
  info('Error', 'red', 'Delete'),
];

export const STATUS_CODES: readonly MailStatusCode[] = STATUSES.map((s) => s.code);

export function isStatusCode(value: number): value is MailStatusCode {
  return Number.isInteger(value) && value >= 0 && value < STATUSES.length;
}

export function statusInfo(code: number): StatusInfo | undefined {
  return isStatusCode(code) ? STATUSES[code] : undefined;
}

/** Statuses a mail may be deleted from (docs/lifecycle.md §2). */
export const DELETABLE_STATUSES: readonly MailStatusCode[] = [
  MailStatus.Dequeued,
  MailStatus.ProviderSent,
  MailStatus.ProviderError,
  MailStatus.Error,
];

/** Statuses an operator may requeue from (docs/lifecycle.md §2). */
export const REQUEUEABLE_STATUSES: readonly MailStatusCode[] = [MailStatus.Dequeued, MailStatus.ProviderError, MailStatus.Error];

/**
 * Statuses whose content (raw message, bodies, attachments) content retention removes: the outcomes of delivery.
 * Not Dequeued: an operator set it aside to decide later, and removing its content would make a dequeue a discard
 * (docs/operations.md#content-retention). The record goes at RETENTION_DAYS whatever its status.
 */
export const CONTENT_RETENTION_STATUSES: readonly MailStatusCode[] = [MailStatus.ProviderSent, MailStatus.ProviderError, MailStatus.Error];
