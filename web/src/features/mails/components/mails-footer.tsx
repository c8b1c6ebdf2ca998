import { Button } from '../../../components/ui/button';
import { formatCount } from './mails-filters';
import { FOOTER_HEIGHT } from './table-layout';

interface MailsFooterProps {
  total: number;
  /** More mails match than the server counts (a search or a date range): `total` is its cap, shown "1,000+". */
  totalIsLowerBound: boolean;
  selected: number;
  /** 1-based position of the first row shown and how many rows are shown. */
  firstRow: number;
  rowCount: number;
  canPrevious: boolean;
  canNext: boolean;
  canLast: boolean;
  onFirst: () => void;
  onPrevious: () => void;
  onNext: () => void;
  onLast: () => void;
}

/** The table footer (docs/console.md §2): `total` and `selected`, the range shown ("1–50 of 12,345") and the pager. */
export function MailsFooter(props: MailsFooterProps) {
  const { total, selected, firstRow, rowCount } = props;
  const of = props.totalIsLowerBound ? `${formatCount(total)}+` : formatCount(total);
  const range = rowCount === 0 ? `0 of ${of}` : `${formatCount(firstRow)}–${formatCount(firstRow + rowCount - 1)} of ${of}`;
  return (
    <footer className="mails-footer" style={{ height: FOOTER_HEIGHT }}>
      <div className="mails-footer__counts">
        <span data-testid="footer-total">{props.totalIsLowerBound ? `total: ${of}` : `total: ${total}`}</span>
        <span data-testid="footer-selected">{`selected: ${selected}`}</span>
      </div>
      <nav className="pager" aria-label="Pages">
        <span className="pager__status" data-testid="footer-range" aria-live="polite">
          {range}
        </span>
        <Button size="small" onClick={props.onFirst} disabled={!props.canPrevious}>
          First
        </Button>
        <Button size="small" onClick={props.onPrevious} disabled={!props.canPrevious}>
          Previous
        </Button>
        <Button size="small" onClick={props.onNext} disabled={!props.canNext}>
          Next
        </Button>
        <Button size="small" onClick={props.onLast} disabled={!props.canLast}>
          Last
        </Button>
      </nav>
    </footer>
  );
}
