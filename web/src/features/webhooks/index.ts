export { WebhooksButton } from './components/webhooks-button';
export { webhookKeys } from './api/webhooks-api';
