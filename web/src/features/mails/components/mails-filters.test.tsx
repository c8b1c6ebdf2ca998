import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { createRef } from 'react';
import { describe, expect, it, vi } from 'vitest';
import { NO_FILTERS } from './mail-view';
import { MailsFilters, SEARCH_DEBOUNCE_MS, SEARCH_SEND_AT_ONCE_AFTER_MS } from './mails-filters';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function renderFilters() {
  const onChange = vi.fn();
  render(<MailsFilters filters={NO_FILTERS} counts={undefined} onChange={onChange} searchRef={createRef()} />);
  const searches = () => onChange.mock.calls.map(([change]) => (change as { q?: string }).q).filter((q) => q !== undefined);
  return { box: screen.getByRole('searchbox', { name: 'Search sender, recipients and subject' }), searches };
}

describe('the search box', () => {
  it('sends a word typed in one burst once, after the pause', async () => {
    const user = userEvent.setup();
    const { box, searches } = renderFilters();
    await user.type(box, 'kowalski');
    expect(searches()).toEqual([]);
    await sleep(SEARCH_DEBOUNCE_MS + 50);
    expect(searches()).toEqual(['kowalski']);
  });

  it('sends the first key after a quiet spell at once, then debounces the burst it starts', async () => {
    const user = userEvent.setup();
    const { box, searches } = renderFilters();
    await user.type(box, 'kowalski');
    await sleep(SEARCH_SEND_AT_ONCE_AFTER_MS + 50);
    expect(searches()).toEqual(['kowalski']);

    await user.type(box, '7');
    // No debounce waited: the narrowed search left with the key.
    expect(searches()).toEqual(['kowalski', 'kowalski7']);

    await user.type(box, '78');
    expect(searches()).toEqual(['kowalski', 'kowalski7']);
    await sleep(SEARCH_DEBOUNCE_MS + 50);
    expect(searches()).toEqual(['kowalski', 'kowalski7', 'kowalski778']);
  });

  it('waits out the debounce for a search too short for the index', async () => {
    const user = userEvent.setup();
    const { box, searches } = renderFilters();
    await user.type(box, 'ko');
    expect(searches()).toEqual([]);
    await sleep(SEARCH_DEBOUNCE_MS + 50);
    expect(searches()).toEqual(['ko']);
  });
});
