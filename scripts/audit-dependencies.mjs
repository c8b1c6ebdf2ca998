#!/usr/bin/env node
/**
 * `npm audit --omit=dev --audit-level=high` for CI (.ci/run): fails (exit 1) when an installed production
 * dependency has a high or critical advisory, and lists them. When the registry's audit endpoint does not
 * answer (offline, a mirror or proxy without it), it says so and exits 0: nothing was checked, and a CI
 * run should not fail for the registry's sake. `--report FILE` reads a saved `npm audit --json` instead.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const reportFlag = process.argv.indexOf('--report');
let text;
if (reportFlag !== -1) {
  text = fs.readFileSync(process.argv[reportFlag + 1], 'utf8');
} else {
  const run = spawnSync('npm', ['audit', '--omit=dev', '--audit-level=high', '--json'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  text = run.stdout;
}

let report;
try {
  report = JSON.parse(text);
} catch {
  report = undefined;
}
const counts = report?.metadata?.vulnerabilities;
if (!counts) {
  const why = report?.message ?? report?.error?.summary ?? 'no report';
  console.log(`npm audit: the registry's audit endpoint did not answer (${why}); production dependencies were NOT checked.`);
  process.exit(0);
}

const high = (counts.high ?? 0) + (counts.critical ?? 0);
const names = Object.values(report.vulnerabilities ?? {})
  .filter((entry) => entry.severity === 'high' || entry.severity === 'critical')
  .map((entry) => `${entry.name} (${entry.severity}${entry.fixAvailable ? ', fix available: npm audit fix' : ''})`);
console.log(
  `npm audit (production dependencies): ${counts.critical ?? 0} critical, ${counts.high ?? 0} high, ${counts.moderate ?? 0} moderate, ${counts.low ?? 0} low`,
);
if (high > 0) {
  console.log(`High or critical advisories: ${names.join(', ')}. Run npm audit --omit=dev for the details.`);
  process.exit(1);
}
