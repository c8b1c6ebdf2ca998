import '@testing-library/jest-dom/vitest';
import { cleanup, configure } from '@testing-library/react';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { server } from './server';
import { installTableViewport, resetTableViewport } from './table-viewport';

installTableViewport();

// findBy* and waitFor return as soon as what they wait for is there, so a long deadline costs a passing test
// nothing. The library's 1 s default failed on a loaded two-core CI machine, where this suite ran 5× slower
// than alone (the browser suite and the PostgreSQL half beside it); no test here waits for a thing NOT to
// happen through these, so nothing gets slower.
configure({ asyncUtilTimeout: 10_000 });

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
