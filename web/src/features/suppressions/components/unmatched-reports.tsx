import { LoadMoreButton } from '../../../components/ui/load-more-button';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { formatDate } from '../../../lib/format-date';
import { useUnmatchedReports } from '../api/suppressions-api';
import { reportContentText, reportKindText } from './suppression-text';

/**
 * The bounce and complaint reports no mail was found for (docs/bounces.md): kept so none is lost, shown with what
 * was read in them and where they came back to. The raw report stays in the API (`GET /api/v1/bounces/{id}/raw`).
 */
export function UnmatchedReports({ token }: { token: string }) {
  const reports = useUnmatchedReports(token);
  const rows = reports.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <div className="panel__scroll" tabIndex={0} role="region" aria-label="Unmatched bounce reports">
      <table className="panel__table">
        <thead>
          <tr>
            <th scope="col">Received</th>
            <th scope="col">Kind</th>
            <th scope="col">Sent to</th>
            <th scope="col">What it says</th>
            <th scope="col">Returned Message-ID</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((report) => {
            const at = formatDate(report.receivedAt);
            return (
              <tr key={report.id}>
                <td className="nowrap" title={at?.utc}>
                  {at?.local}
                </td>
                <td>{reportKindText(report)}</td>
                <td>
                  <TruncatedText className="mono" text={report.envelopeTo} />
                </td>
                <td>
                  <TruncatedText text={reportContentText(report)} />
                </td>
                <td>
                  <TruncatedText className="mono" text={report.summary.originalMessageId ?? '—'} />
                </td>
              </tr>
            );
          })}
          {rows.length === 0 ? (
            <tr>
              <td colSpan={5} className="muted">
                {reports.isPending
                  ? 'Loading…'
                  : reports.isError
                    ? 'The reports could not be loaded.'
                    : 'No unmatched reports: every report that came back was matched to its mail.'}
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <LoadMoreButton pages={reports} />
    </div>
  );
}
