export * from './status.js';
export * from './common.js';
export * from './auth.js';
export * from './mail.js';
export * from './submission.js';
export * from './events.js';
export * from './bulk.js';
export * from './queue-health.js';
