export { AuditButton } from './components/audit-button';
export { auditKeys } from './api/list-audit';
