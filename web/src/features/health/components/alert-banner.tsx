import type { AlertRuleStatus } from '@outbox/contract';
import { formatDate } from '../../../lib/format-date';
import { useAlerts } from '../api/get-alerts';

/**
 * The firing alerts above the health strip (docs/alerts.md#the-console-banner): one line per firing rule, what it
 * watches, since when, and the rule's own sentence. Not dismissable: it goes when the rule resolves, in every
 * open console at once (live `alerts` event), or at the next poll when the stream is down. Nothing shows while
 * no rule fires.
 */
export function AlertBanner({ token }: { token: string }) {
  const alerts = useAlerts(token);
  const firing = alerts.data?.data.filter((rule) => rule.state === 'firing') ?? [];
  if (firing.length === 0) return null;
  return (
    <section className="alert-banner" role="alert" aria-label="Alerts firing">
      <ul className="alert-banner__list">
        {firing.map((rule) => (
          <AlertLine key={rule.rule} rule={rule} />
        ))}
      </ul>
    </section>
  );
}

function AlertLine({ rule }: { rule: AlertRuleStatus }) {
  const since = formatDate(rule.since);
  return (
    <li className="alert-banner__item">
      <strong className="alert-banner__title">Alert: {rule.title}</strong>
      {since ? (
        <span className="alert-banner__since">
          since{' '}
          <time dateTime={since.utc} title={since.utc}>
            {since.local}
          </time>
        </span>
      ) : null}
      <span className="alert-banner__summary">{rule.summary}</span>
    </li>
  );
}
