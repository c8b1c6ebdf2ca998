// Keeps docs and comments true. In the repository's Markdown files every relative link must name a file that
// exists and, for `#anchor` links, a heading of that file with that anchor (GitHub's slugs). In source comments
// (TypeScript and scripts) every document named (a page of docs/ with its anchor, README.md, ARCHITECTURE.md, …)
// and every source path named (from the file's folder, its package's src/ or test/, the package or the
// repository; bench/ names the server's) must exist, and
// no comment cites what the repository does not hold: an issue number of the tracker, or the product document
// kept outside it (the product's decisions live in docs/decisions.md and the topic's own document). Prints each problem and exits 1 if there is
// one. Part of `npm test` (the lint step); alone: `node scripts/check-doc-links.mjs`.
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

// Source comments.
const sources = execFileSync('git', ['ls-files', '*.ts', '*.tsx', '*.mjs', '*.js'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file && !file.includes('node_modules/') && fs.existsSync(path.join(root, file)));
/** Where a source path in a comment may start: the file's folder, its package's source, the package, the repository. */
function rootsOf(file) {
  const top = file.split('/')[0];
  const packageRoots = [path.join(root, top, 'src'), path.join(root, top, 'test'), path.join(root, top)];
  if (top === 'bench') packageRoots.push(path.join(root, 'server', 'src'));
  return [path.dirname(path.join(root, file)), ...packageRoots, root];
}
/** The comment text of a line: a whole comment line, or what follows `//` after code. */
function commentOf(line) {
  const trimmed = line.trim();
  if (/^(\/\/|\/\*|\*)/.test(trimmed)) return trimmed;
  const at = line.search(/(^|\s)\/\/\s/);
  return at >= 0 ? line.slice(at) : '';
}
let commentProblems = 0;
for (const file of sources) {
  fs.readFileSync(path.join(root, file), 'utf8')
    .split('\n')
    .forEach((line, index) => {
      const comment = commentOf(line);
      if (!comment) return;
      const where = `${file}:${index + 1}`;
      const problem = (text) => {
        broken.push(`${where}: ${text}`);
        commentProblems += 1;
      };
      if (/\bPRODUCT\.md\b/.test(comment))
        problem("cites PRODUCT.md, which the repository does not hold (cite docs/decisions.md or the topic's doc)");
      if (/\b[Ii]ssues? #?[0-9]+/.test(comment))
        problem('cites an issue number of a tracker the repository does not link (say the why instead)');
      for (const match of comment.matchAll(
        /(?<![\w/.-])((?:docs\/[\w./-]+|README|ARCHITECTURE|CONTRIBUTING|CODE_STYLE)\.md)(?:#([\w-]+))?/g,
      )) {
        const [, named, anchor] = match;
        const target = [
          path.join(root, named),
          path.join(path.dirname(path.join(root, file)), named),
          path.join(root, file.split('/')[0], named),
        ].find((candidate) => fs.existsSync(candidate));
        if (!target) problem(`${named} (no such file)`);
        else if (anchor) {
          if (!cache.has(target)) cache.set(target, anchorsOf(target));
          if (!cache.get(target).has(anchor)) problem(`${named}#${anchor} (no such heading)`);
        }
      }
      for (const match of comment.matchAll(/(?<![\w/.@-])((?:[\w-]+\/)+[\w.-]+\.(?:ts|tsx|mjs))\b/g)) {
        const named = match[1];
        if (!rootsOf(file).some((base) => fs.existsSync(path.join(base, named)))) problem(`${named} (no such source file)`);
      }
    });
}

for (const line of broken) console.log(line);
console.log(
  `${files.length} Markdown files and ${sources.length} source files checked, ${broken.length} problem${broken.length === 1 ? '' : 's'}` +
    (commentProblems > 0 ? ` (${commentProblems} in comments).` : '.'),
);
process.exitCode = broken.length > 0 ? 1 : 0;
