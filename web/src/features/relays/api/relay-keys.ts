/**
 * The Relays view's query keys (docs/console.md §10.22), one tree: a change to a relay or the routes refreshes
 * everything under `all`, and the end of a session removes it.
 */
export const relayKeys = {
  all: ['relays'] as const,
  list: () => [...relayKeys.all, 'list'] as const,
  health: () => [...relayKeys.all, 'health'] as const,
  routes: () => [...relayKeys.all, 'routes'] as const,
  applications: () => [...relayKeys.all, 'applications'] as const,
};
