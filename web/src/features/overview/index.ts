export { OverviewButton } from './components/overview-button';
export { overviewKeys } from './api/overview-api';
