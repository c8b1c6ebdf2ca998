import { act, renderHook, waitFor } from '@testing-library/react';
import { describe, expect, it, vi } from 'vitest';
import type { MailListParams } from '../api/list-mails';
import { useMailView } from './use-mail-view';

describe('useMailView', () => {
  it('announces the next list parameters when a change is dispatched, before the render that shows it', () => {
    const announced: Array<{ params: MailListParams; renderedStatuses: number[] }> = [];
    let rendered: number[] = [];
    const { result } = renderHook(() => {
      const view = useMailView((params) => announced.push({ params, renderedStatuses: rendered }));
      rendered = view.params.statuses;
      return view;
    });

    act(() => result.current.setFilters({ statuses: [4] }));
    expect(announced).toHaveLength(1);
    expect(announced[0]!.params).toMatchObject({ statuses: [4], cursor: null, sort: 'receivedDate' });
    // Heard while the view still showed every status: the request starts before React renders the change.
    expect(announced[0]!.renderedStatuses).toEqual([]);
    expect(result.current.params).toEqual(announced[0]!.params);
  });

  it('two changes in one handler announce where the second one leads, each once', () => {
    const onNextParams = vi.fn();
    const { result } = renderHook(() => useMailView(onNextParams));

    act(() => {
      result.current.setFilters({ q: 'invoice' });
      result.current.sortBy('subject');
    });
    expect(onNextParams).toHaveBeenCalledTimes(2);
    expect(onNextParams.mock.calls[1]![0]).toMatchObject({ q: 'invoice', sort: 'subject' });
    expect(result.current.params).toEqual(onNextParams.mock.calls[1]![0]);
  });

  it('writes the view to the address bar after the frame that shows a change, once for a burst, and not after unmounting', async () => {
    window.history.replaceState(null, '', '/');
    const { result, unmount } = renderHook(() => useMailView());

    act(() => result.current.setFilters({ statuses: [4] }));
    act(() => result.current.setFilters({ statuses: [4, 5] }));
    // Not in the frame that answers the change (replaceState is a round trip to the browser process).
    expect(window.location.search).toBe('');
    await waitFor(() => expect(window.location.search).toBe('?status=4%2C5'));

    act(() => result.current.setFilters({ q: 'invoice' }));
    unmount();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(window.location.search).toBe('?status=4%2C5');
    window.history.replaceState(null, '', '/');
  });
});
