/** vitest setupFiles on the PostgreSQL half: each test file drops the databases it made when it ends. */
import { afterAll } from 'vitest';
import { dropTestDatabases } from './postgres-pool.js';

afterAll(dropTestDatabases, 120_000);
