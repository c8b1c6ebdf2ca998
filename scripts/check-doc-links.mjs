// Checks every relative link in the repository's Markdown files: the file must exist and, for `#anchor`
// links, a heading of that file must have that anchor (GitHub's slugs). Prints each broken link and exits 1
// if there is one. Not part of `npm test`; run it after editing docs: `node scripts/check-doc-links.mjs`.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const files = execFileSync('git', ['ls-files', '*.md'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2, … */
function anchorsOf(file) {
  const seen = new Map();
  const anchors = new Set();
  let fenced = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = heading[1]
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '');
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

const cache = new Map();
const broken = [];
for (const file of files) {
  const absolute = path.join(root, file);
  if (!fs.existsSync(absolute)) continue;
  let fenced = false;
  fs.readFileSync(absolute, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
      if (fenced) return;
      const unticked = line.replace(/`[^`]*`/g, '');
      for (const match of unticked.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = match[1];
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
        const [pathPart, anchor] = target.split('#');
        const resolved = pathPart ? path.resolve(path.dirname(absolute), decodeURIComponent(pathPart)) : absolute;
        const where = `${file}:${index + 1}`;
        if (!fs.existsSync(resolved)) {
          broken.push(`${where}: ${target} (no such file)`);
          continue;
        }
        if (anchor === undefined || anchor === '') continue;
        if (!resolved.endsWith('.md')) continue;
        if (!cache.has(resolved)) cache.set(resolved, anchorsOf(resolved));
        if (!cache.get(resolved).has(anchor)) broken.push(`${where}: ${target} (no heading #${anchor})`);
      }
    });
}

for (const line of broken) console.log(line);
console.log(`${files.length} Markdown files checked, ${broken.length} broken link${broken.length === 1 ? '' : 's'}.`);
process.exitCode = broken.length > 0 ? 1 : 0;
