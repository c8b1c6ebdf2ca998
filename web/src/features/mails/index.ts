export { MailsListView } from './components/mails-list-view';
export { mailKeys } from './api/list-mails';
