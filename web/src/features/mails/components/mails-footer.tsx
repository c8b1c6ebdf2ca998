import { Button } from '../../../components/ui/button';
import { FOOTER_HEIGHT } from './table-layout';

interface MailsFooterProps {
  total: number;
  selected: number;
  pageIndex: number;
  pageCount: number;
  canPrevious: boolean;
  canNext: boolean;
  onFirst: () => void;
  onPrevious: () => void;
  onNext: () => void;
}

/** The table footer (SPEC.md §2): `total` and `selected`, then the pager. */
export function MailsFooter({
  total,
  selected,
  pageIndex,
  pageCount,
  canPrevious,
  canNext,
  onFirst,
  onPrevious,
  onNext,
}: MailsFooterProps) {
  return (
    <footer className="mails-footer" style={{ height: FOOTER_HEIGHT }}>
      <div className="mails-footer__counts">
        <span data-testid="footer-total">{`total: ${total}`}</span>
        <span data-testid="footer-selected">{`selected: ${selected}`}</span>
      </div>
      <nav className="pager" aria-label="Pages">
        <Button size="small" onClick={onFirst} disabled={!canPrevious}>
          First
        </Button>
        <Button size="small" onClick={onPrevious} disabled={!canPrevious}>
          Previous
        </Button>
        <span className="pager__status" aria-live="polite">{`Page ${pageIndex + 1} of ${pageCount}`}</span>
        <Button size="small" onClick={onNext} disabled={!canNext}>
          Next
        </Button>
      </nav>
    </footer>
  );
}
