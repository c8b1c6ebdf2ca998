/**
 * The console's live updates (docs/console.md: live updates): reads `GET /api/v1/events` and applies each
 * event to what TanStack Query holds (live-cache.ts), counts new mails for the "N new — show" banner and new
 * failures for the tab title while the tab is in the background, and reports the stream's state.
 */
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'react';
import { useQueryClient, type QueryClient } from '@tanstack/react-query';
import type { LiveCountsEvent, LiveMail, LiveMailEvent, MailDetail, MailListResponse } from '@outbox/contract';
import { openEventStream, type StreamEvent, type StreamState } from '../../../lib/event-stream';
import { listParamsOfKey, mailKeys, type MailListParams } from '../api/list-mails';
import { applyCounts, applyDetailChange, applyMailChanges, isFailure, matchesView } from './live-cache';
import { useBackgroundTitle } from './use-background-title';

/** A resync reloads the lists on screen; several in a row (an overflowing burst) reload at most this often. */
const RESYNC_EVERY_MS = 2000;

export interface LiveUpdates {
  state: StreamState;
  /** New mails that would enter the current view since it was loaded. */
  newCount: number;
  /** Loads the view's first page again, with the new mails in it. */
  showNew: () => void;
}

function listsOf(queryClient: QueryClient) {
  return queryClient.getQueriesData<MailListResponse>({ queryKey: mailKeys.lists() });
}

/**
 * `beforeRowsChange` runs before a mail event changes rows on screen: the view keeps keyboard focus through
 * it (a row's button can go with a status change). `onMailsChanged` is told of every mail event and resync,
 * for figures other features show (the app wires it: the Overview's statistics).
 */
export function useLiveUpdates(
  token: string,
  params: MailListParams,
  goToFirstPage: () => void,
  beforeRowsChange?: () => void,
  onMailsChanged?: () => void,
): LiveUpdates {
  const queryClient = useQueryClient();
  const [state, setState] = useState<StreamState>('connecting');
  const viewKey = JSON.stringify({ ...params, cursor: null });
  const [fresh, setFresh] = useState<{ viewKey: string; ids: ReadonlySet<number> }>({ viewKey, ids: new Set() });
  const newIds = fresh.viewKey === viewKey ? fresh.ids : new Set<number>();
  // The stream's handlers read the view shown now without reopening the stream when it changes.
  const paramsRef = useRef(params);
  const viewKeyRef = useRef(viewKey);
  const beforeRowsChangeRef = useRef(beforeRowsChange);
  const onMailsChangedRef = useRef(onMailsChanged);
  useLayoutEffect(() => {
    paramsRef.current = params;
    viewKeyRef.current = viewKey;
    beforeRowsChangeRef.current = beforeRowsChange;
    onMailsChangedRef.current = onMailsChanged;
  });
  const title = useBackgroundTitle();
  const noteFailures = title.noteFailures;

  useEffect(() => {
    let lastResync = 0;
    let resyncTimer: number | undefined;
    const resync = () => {
      onMailsChangedRef.current?.();
      if (resyncTimer !== undefined) return;
      const wait = Math.max(0, lastResync + RESYNC_EVERY_MS - Date.now());
      resyncTimer = window.setTimeout(() => {
        resyncTimer = undefined;
        lastResync = Date.now();
        void queryClient.invalidateQueries({ queryKey: mailKeys.lists() });
      }, wait);
    };

    function onMails(mails: LiveMail[]): void {
      const byId = new Map(mails.map((mail) => [mail.id, mail]));
      beforeRowsChangeRef.current?.();
      for (const [key, list] of listsOf(queryClient)) {
        if (!list) continue;
        const next = applyMailChanges(list, byId);
        if (next !== list) queryClient.setQueryData(key, next);
      }
      for (const mail of mails) {
        const detail = queryClient.getQueryData<MailDetail>(mailKeys.detail(mail.id));
        if (detail) queryClient.setQueryData(mailKeys.detail(mail.id), applyDetailChange(detail, mail));
      }
      // New mails for the banner: in the view's filter and not on the page already.
      const current = paramsRef.current;
      const shown = new Set(queryClient.getQueryData<MailListResponse>(mailKeys.list(current))?.data.map((m) => m.id));
      const entering = mails.filter((mail) => mail.isNew && matchesView(current, mail) && !shown.has(mail.id)).map((mail) => mail.id);
      if (entering.length > 0) {
        const key = viewKeyRef.current;
        setFresh((before) => {
          const ids = new Set(before.viewKey === key ? before.ids : []);
          for (const id of entering) ids.add(id);
          return { viewKey: key, ids };
        });
      }
      noteFailures(mails.filter((mail) => isFailure(mail.status)).map((mail) => mail.id));
      onMailsChangedRef.current?.();
    }

    function onCounts(counts: Record<string, number>): void {
      for (const [key, list] of listsOf(queryClient)) {
        const listParams = listParamsOfKey(key);
        if (list && listParams) queryClient.setQueryData(key, applyCounts(list, listParams, counts));
      }
    }

    function onEvent(event: StreamEvent): void {
      try {
        if (event.event === 'mail') onMails((JSON.parse(event.data) as LiveMailEvent).mails);
        else if (event.event === 'counts') onCounts((JSON.parse(event.data) as LiveCountsEvent).counts);
        else if (event.event === 'resync') resync();
        // An alert rule changed state: the banner (features/health, key 'alerts' by name) reads GET /api/v1/alerts.
        else if (event.event === 'alerts') void queryClient.invalidateQueries({ queryKey: ['alerts'] });
      } catch {
        resync(); // an event we cannot read: reload rather than show something wrong
      }
    }

    const stop = openEventStream({ path: '/api/v1/events', token, onEvent, onState: setState });
    return () => {
      stop();
      window.clearTimeout(resyncTimer);
    };
  }, [token, queryClient, noteFailures]);

  const showNew = useCallback(() => {
    setFresh({ viewKey: viewKeyRef.current, ids: new Set() });
    void queryClient.invalidateQueries({ queryKey: mailKeys.lists() });
    goToFirstPage();
  }, [queryClient, goToFirstPage]);

  return { state, newCount: newIds.size, showNew };
}
