/**
 * A CPU profile of one phase of a benchmark, taken in-process through the inspector (the same profile as
 * `node --cpu-prof`, but limited to the phase, so setup such as queueing mails does not drown it), written as
 * a `.cpuprofile` (open it in Chrome's DevTools) and summarised: self time by function and by package.
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

export async function startCpuProfile(): Promise<() => Promise<{ file: (name: string, dir: string) => string; summary: string }>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  // 200 µs between samples: fine enough for a phase of a few seconds.
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as unknown as {
      profile: { nodes: ProfileNode[]; startTime: number; endTime: number };
    };
    session.disconnect();
    return { file: (name, dir) => writeProfile(profile, name, dir), summary: summarise(profile.nodes) };
  };
}

function writeProfile(profile: object, name: string, dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.cpuprofile`);
  fs.writeFileSync(file, JSON.stringify(profile));
  return file;
}

/** Where a frame's code lives: a package under node_modules, node's own, or this repository's folder. */
function packageOf(url: string): string {
  if (url === '') return '(native, GC, idle)';
  if (url.startsWith('node:')) return 'node';
  const inModules = url.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  if (inModules) return inModules[1]!;
  const inRepo = url.match(/\/(server\/src\/[^/]+|bench)\//);
  return inRepo ? inRepo[1]! : url;
}

function summarise(nodes: ProfileNode[]): string {
  const total = nodes.reduce((sum, n) => sum + (n.hitCount ?? 0), 0);
  const share = (hits: number) => `${((hits / total) * 100).toFixed(1)}%`;
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  for (const node of nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url === '' ? '' : ` ${url.replace(/^.*\/(node_modules|server\/src|bench)\//, '$1/')}:${lineNumber + 1}`;
    const key = `${functionName || '(anonymous)'}${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
    byPackage.set(packageOf(url), (byPackage.get(packageOf(url)) ?? 0) + hits);
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([key, hits]) => `  ${share(hits).padStart(6)}  ${key}`)
      .join('\n');
  return `self time by package (${total} samples):\n${top(byPackage, 12)}\nself time by function:\n${top(byFunction, 25)}`;
}
