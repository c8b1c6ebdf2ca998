// Lint checks style and, above all, the architecture of STYLE.md: dependencies point one way
// (web → contract ← server; http/intake/cli → services → repositories → store), features never import each
// other, and there are no import cycles.
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import reactHooks from 'eslint-plugin-react-hooks';
import eslintConfigPrettier from 'eslint-config-prettier/flat';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const serverLayers = [
  // Routes validate and delegate: no SQL, no store, no repositories.
  { target: './server/src/http', from: './server/src/store', message: 'http/ talks to services, never to the store.' },
  { target: './server/src/http', from: './server/src/**/*.repository.ts', message: 'http/ talks to services, never to repositories.' },
  // Domain, delivery and intake never reach up into the HTTP layer.
  {
    target: './server/src/!(http)/**',
    from: './server/src/http',
    message: 'Only app.ts wires http/; services, workers and the SMTP listener never import it.',
  },
  { target: './server/src/store', from: './server/src/!(store)/**', message: 'store/ is the bottom layer.' },
  // The mail folders by job (server/README.md): the model and its one writer (mail/), reading pages (list/),
  // accepting mail (submission/), made-up mail for trying the console (demo/).
  {
    target: './server/src/!(cli|demo)/**',
    from: './server/src/demo',
    message: 'Demo data is written by the CLI only; the service never makes up mail.',
  },
  {
    target: './server/src/mail',
    from: ['./server/src/submission', './server/src/demo', './server/src/delivery', './server/src/bounces'],
    message: 'mail/ is the model and its one writer: submission, delivery and bounces use it, never the reverse.',
  },
  {
    target: './server/src/list',
    from: ['./server/src/submission', './server/src/delivery', './server/src/bounces', './server/src/webhooks'],
    message: 'list/ reads pages of mail; it knows nothing of how mail arrives or leaves.',
  },
  {
    target: './server/src/submission',
    from: ['./server/src/list', './server/src/delivery', './server/src/bounces', './server/src/webhooks'],
    message: 'submission/ accepts mail; it never reads pages, sends or reads bounces.',
  },
  { target: './contract', from: ['./server', './web'], message: 'contract/ imports nothing of the project.' },
  { target: './server', from: './web', message: 'The server never imports the console.' },
  { target: './web', from: './server', message: 'The console talks to the server over HTTP only; share types through contract/.' },
];

const webLayers = [
  {
    target: './web/src/features/auth',
    from: './web/src/features/!(auth)/**',
    message: 'Features never import each other; the app shell wires them.',
  },
  {
    target: './web/src/features/mails',
    from: './web/src/features/!(mails)/**',
    message: 'Features never import each other; the app shell wires them.',
  },
  ...['bulk', 'health', 'audit', 'applications', 'webhooks', 'suppressions', 'overview', 'relays'].map((feature) => ({
    target: `./web/src/features/${feature}`,
    from: `./web/src/features/!(${feature})/**`,
    message: 'Features never import each other; the app shell wires them.',
  })),
  {
    target: './web/src/components',
    from: ['./web/src/features', './web/src/app'],
    message: 'Shared UI is presentational: no features, no app.',
  },
  { target: './web/src/lib', from: ['./web/src/features', './web/src/app'], message: 'lib/ is below features and app.' },
];

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/.tmp/**', 'data/**', '**/test-results/**', '**/playwright-report/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node }, ecmaVersion: 2023, sourceType: 'module' },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: ['*/tsconfig.json'], noWarnOnMultipleProjects: true })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: [...serverLayers, ...webLayers] }],
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['web/**/*.{ts,tsx}'],
    languageOptions: { globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      // TanStack Table's hook is known not to be memoisable; the React Compiler is not used here.
      'react-hooks/incompatible-library': 'off',
    },
  },
  {
    files: ['**/test/**', '**/*.test.{ts,tsx}', 'e2e/**', 'bench/**', 'scripts/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', 'no-control-regex': 'off' },
  },
  // Layout is Prettier's (`npm run lint` checks it with `prettier --check`); no ESLint rule argues with it.
  eslintConfigPrettier,
);
