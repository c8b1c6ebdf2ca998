import { Button } from './button';

/** The part of a TanStack infinite query the button needs. */
export interface MorePages {
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => Promise<unknown>;
}

/** "Load more" under a side panel's table (audit log, deliveries, suppressions): shown while a next page exists. */
export function LoadMoreButton({ pages }: { pages: MorePages }) {
  if (!pages.hasNextPage) return null;
  return (
    <Button size="small" className="panel__more" disabled={pages.isFetchingNextPage} onClick={() => void pages.fetchNextPage()}>
      {pages.isFetchingNextPage ? 'Loading…' : 'Load more'}
    </Button>
  );
}
