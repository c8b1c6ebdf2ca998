export { SuppressionsButton } from './components/suppressions-button';
export { suppressionKeys } from './api/suppressions-api';
