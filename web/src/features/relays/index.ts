export { RelaysButton } from './components/relays-button';
export { relayKeys } from './api/relay-keys';
