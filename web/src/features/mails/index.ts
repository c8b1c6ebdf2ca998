export { MailsListView } from './components/mails-list-view';
export { mailKeys, prefetchMailList } from './api/list-mails';
export { initialListParams } from './components/use-mail-view';
export type { MailSelection } from './components/use-mail-selection';
export type { MailFilters } from './components/mail-view';
