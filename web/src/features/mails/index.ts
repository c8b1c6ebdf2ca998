export { MailsListView } from './components/mails-list-view';
export { mailKeys } from './api/list-mails';
export type { MailSelection } from './components/use-mail-selection';
