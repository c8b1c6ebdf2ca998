export { HealthStrip } from './components/health-strip';
export { healthKeys } from './api/get-queue-health';
export { instancesKeys } from './api/list-instances';
