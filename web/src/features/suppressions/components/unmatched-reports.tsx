import type { BounceReport } from '@outbox/contract';
import { LocalTime } from '../../../components/ui/local-time';
import { PagedPanelTable, type PanelColumn } from '../../../components/ui/panel-table';
import { TruncatedText } from '../../../components/ui/truncated-text';
import { useUnmatchedReports } from '../api/suppressions-api';
import { reportContentText, reportKindText } from './suppression-text';

const COLUMNS: PanelColumn<BounceReport>[] = [
  { id: 'received', header: 'Received', className: 'nowrap', cell: (report) => <LocalTime iso={report.receivedAt} empty={null} /> },
  { id: 'kind', header: 'Kind', cell: reportKindText },
  { id: 'sentTo', header: 'Sent to', cell: (report) => <TruncatedText className="mono" text={report.envelopeTo} /> },
  { id: 'says', header: 'What it says', cell: (report) => <TruncatedText text={reportContentText(report)} /> },
  {
    id: 'messageId',
    header: 'Returned Message-ID',
    cell: (report) => <TruncatedText className="mono" text={report.summary.originalMessageId ?? '—'} />,
  },
];

/**
 * The bounce and complaint reports no mail was found for (docs/bounces.md): kept so none is lost, shown with what
 * was read in them and where they came back to. The raw report stays in the API (`GET /api/v1/bounces/{id}/raw`).
 */
export function UnmatchedReports({ token }: { token: string }) {
  const reports = useUnmatchedReports(token);
  return (
    <PagedPanelTable
      label="Unmatched bounce reports"
      columns={COLUMNS}
      rowKey={(report) => report.id}
      pages={reports}
      emptyText="No unmatched reports: every report that came back was matched to its mail."
      errorText="The reports could not be loaded."
    />
  );
}
