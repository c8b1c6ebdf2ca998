export { ApplicationsButton } from './components/applications-button';
export { applicationKeys } from './api/applications-api';
