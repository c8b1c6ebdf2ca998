export { HealthStrip } from './components/health-strip';
export { AlertBanner } from './components/alert-banner';
export { healthKeys } from './api/get-queue-health';
export { alertKeys } from './api/get-alerts';
export { instancesKeys } from './api/list-instances';
