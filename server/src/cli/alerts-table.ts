/** `outbox alerts` for a terminal: each rule's state, since when, and its sentence (GET /api/v1/alerts; --json prints that). */
import type { AlertsResponse } from '@outbox/contract';
import { formatTextTable } from './text-table.js';

export function formatAlerts({ data, meta }: AlertsResponse): string[] {
  const rows = data.map((rule) => [
    rule.rule,
    rule.state === 'firing' ? 'FIRING' : rule.state,
    rule.since ? rule.since.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '-',
    rule.summary,
  ]);
  const header = ['RULE', 'STATE', 'SINCE', 'SUMMARY'];
  const summary = meta.firing === 0 ? 'No alert firing.' : `${meta.firing} ${meta.firing === 1 ? 'alert' : 'alerts'} firing.`;
  return [...formatTextTable(header, rows), summary];
}
