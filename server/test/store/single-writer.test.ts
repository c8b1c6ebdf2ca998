/**
 * The seal of the single writer : only the files of mail/write/ (and the
 * migrations) may write `mails`, the queue `mail_queue` or the `status_counts` counters. A source scan of
 * server/src: any other file that inserts, updates or deletes one of them — through Kysely's builder or in raw SQL,
 * on one line or split over several — fails this test, as does a write to a table named at run time outside the
 * few files allowed (each says why).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
/** The single writer's folder (mail/write/): a mail's creation, its moves, the claim, the counters, the import. */
const WRITER = 'mail/write/';
/** Files that write to a table chosen at run time, and why that never reaches mails or status_counts. */
const DYNAMIC_WRITERS: Record<string, string> = {
  // Its generic insert takes every exported table but mails (which go through mailImportWriter); status_counts
  // is not exported.
  'store/transfer.ts': 'import',
  // The multi-row INSERT helper: its callers name the table, and insertRows(…, 'mails') is a guarded write below.
  'store/row-insert.ts': 'helper',
};

const GUARDED = '(mails|mail_queue|status_counts)';
const PATTERNS: RegExp[] = [
  // Kysely: insertInto('mails'), updateTable("status_counts"), deleteFrom('mails'), replaceInto, mergeInto.
  new RegExp(`\\b(insertInto|updateTable|deleteFrom|replaceInto|mergeInto)\\(\\s*['"\`]${GUARDED}\\b`),
  // store/row-insert.ts: insertRows(db, 'mails', rows).
  new RegExp(`\\binsertRows\\(\\s*\\w+,\\s*['"\`]${GUARDED}\\b`),
  // Raw SQL: update mails, insert into "status_counts", delete from mails, replace into, merge into.
  new RegExp(
    `\\b(update|insert\\s+(or\\s+\\w+\\s+)?into|delete\\s+from|replace\\s+into|merge\\s+into|truncate(\\s+table)?)\\s+"?${GUARDED}"?(\\s|\\(|$|\`)`,
    'i',
  ),
];
/** A write whose table is not a string literal. */
const DYNAMIC = /\b(insertInto|updateTable|deleteFrom)\(\s*[^'"`\s)]/;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/**
 * The places in `text` that write a guarded table, as `line: text`. Comment lines are blanked first; each line is
 * then read with the next two joined to it, so a statement split over lines (`update\n  mails set …`,
 * `.updateTable(\n 'mails')`) is found at the line where it starts.
 */
export function guardedWrites(text: string): string[] {
  const lines = text.split('\n').map((line) => (/^\s*(\/\/|\*|\/\*)/.test(line) ? '' : line));
  const found: string[] = [];
  lines.forEach((line, i) => {
    const joined = [line, lines[i + 1] ?? '', lines[i + 2] ?? ''].join(' ');
    // Reported where the write begins: the first of the lines that holds it, not each line of it.
    const starts =
      PATTERNS.some((p) => p.test(joined)) && !PATTERNS.some((p) => p.test([lines[i + 1] ?? '', lines[i + 2] ?? ''].join(' ')));
    if (starts) found.push(`${i + 1}: ${line.trim()}`);
  });
  return found;
}

describe('the single writer of statuses and counters', () => {
  it('recognises the writes it guards against (so a pass means something)', () => {
    for (const bad of [
      "await db.updateTable('mails').set({ status: 3 })",
      'db.insertInto("status_counts").values(rows)',
      "trx.deleteFrom('mails').where('id', '=', 1)",
      "await writes.add(insertRows(db, 'mails', rows))",
      'sql`update mails set status = 0 where id = ${id}`',
      'sql`UPDATE status_counts SET count = count + 1`',
      'sql`insert into mails (id, status) values (1, 9)`',
      'sql`delete from "mails" where id = 1`',
      "await db.updateTable('mail_queue').set({ lease_owner: null })",
      'sql`update\n      mails set status = 3`',
      "await trx\n  .deleteFrom(\n    'mail_queue')",
    ])
      expect(guardedWrites(bad), bad).toHaveLength(1);
    for (const fine of [
      "db.selectFrom('mails').select('status')",
      "db.updateTable('mail_recipients').set({ outcome: 'accepted' })",
      "db.selectFrom('mail_queue').select('mail_id')",
      "db.insertInto('mail_events').values(rows)",
      "insertRows(db, 'mail_events', events)",
      'sql`update mail_recipients set outcome = v.outcome`',
      '// update mails set status: a comment',
    ])
      expect(guardedWrites(fine), fine).toEqual([]);
  });

  it('finds no write of mails, mail_queue or status_counts outside mail/write/ and the migrations', () => {
    const offenders: string[] = [];
    for (const file of sourceFiles(src)) {
      const relative = path.relative(src, file).split(path.sep).join('/');
      if (relative.startsWith(WRITER) || relative.startsWith('store/migrations/')) continue;
      const text = fs.readFileSync(file, 'utf8');
      for (const write of guardedWrites(text)) offenders.push(`${relative}:${write}`);
      if (!(relative in DYNAMIC_WRITERS)) {
        text.split('\n').forEach((line, i) => {
          if (DYNAMIC.test(line)) offenders.push(`${relative}:${i + 1}: a write to a table named at run time: ${line.trim()}`);
        });
      }
    }
    expect(offenders).toEqual([]);
    // The writer itself is where they are.
    const written = fs
      .readdirSync(path.join(src, WRITER))
      .flatMap((file) => guardedWrites(fs.readFileSync(path.join(src, WRITER, file), 'utf8')));
    expect(written.length).toBeGreaterThanOrEqual(3);
  });
});
