import './live-notices.css';
import type { LiveUpdates } from './use-live-updates';

/**
 * Over the top of the table, so that neither changes the page's layout: the "N new — show" button, and a
 * status line while the live stream is down ("Live updates paused — reconnecting…").
 */
export function LiveNotices({ live }: { live: LiveUpdates }) {
  return (
    <div className="live-notices">
      <div role="status" className="live-notices__status">
        {live.state === 'reconnecting' ? <span className="live-notices__paused">Live updates paused — reconnecting…</span> : null}
      </div>
      {live.newCount > 0 ? (
        <button type="button" className="live-notices__new" onClick={live.showNew}>
          {`${live.newCount.toLocaleString('en')} new — show`}
        </button>
      ) : null}
    </div>
  );
}
