export { BulkBar, type BulkSelection } from './components/bulk-bar';
