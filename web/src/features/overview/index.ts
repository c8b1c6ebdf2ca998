export { OverviewButton } from './components/overview-button';
export { createLiveStatisticsRefresh, overviewKeys } from './api/overview-api';
