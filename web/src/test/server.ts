import { setupServer } from 'msw/node';

/** Every test adds the handlers it needs; an unhandled request fails the test. */
export const server = setupServer();
