import '@testing-library/jest-dom/vitest';
import { cleanup } from '@testing-library/react';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { server } from './server';
import { installTableViewport, resetTableViewport } from './table-viewport';

installTableViewport();

beforeAll(() => server.listen({ onUnhandledRequest: 'error' }));
afterEach(() => {
  cleanup();
  resetTableViewport();
  server.resetHandlers();
  window.localStorage.clear();
  // The list view keeps its view in the address bar; every test starts from the bare address.
  window.history.replaceState(null, '', '/');
});
afterAll(() => server.close());
