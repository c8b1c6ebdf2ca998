// Bundles the server (and the contract it imports) into dist/ with esbuild; node_modules stay external.
// Type checking is `npm run typecheck` at the root: esbuild only strips types.
import { build } from 'esbuild';

await build({
  entryPoints: { main: 'src/main.ts', cli: 'src/cli/main.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  // @outbox/contract is a workspace package of TypeScript sources: bundle it rather than leave it external.
  alias: { '@outbox/contract': '../contract/src/index.ts' },
  sourcemap: true,
  logLevel: 'warning',
});
