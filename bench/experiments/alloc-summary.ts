/*
 * Sums a sampling heap profile (bench/experiments/alloc-profile.mjs) by package and by function:
 * `npx tsx bench/experiments/alloc-summary.ts /tmp/alloc-123.heapprofile [settlements]`. With the
 * number of requests the process served, it prints the bytes allocated per request too.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: ProfileNode[];
}

const [file, requests] = process.argv.slice(2);
if (!file) {
  console.error('usage: alloc-summary.ts FILE [requests]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode };

/** node_modules/<package>, node's own modules, the service's bundle, or V8's builtins. */
function ownerOf(url: string): string {
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.includes('/dist/')) return 'the service (dist)';
  if (url.startsWith('node:')) return "node's own (node:…)";
  return url || '(V8 builtins)';
}

const byOwner = new Map<string, number>();
const byFunction = new Map<string, number>();
let total = 0;
const add = (map: Map<string, number>, key: string, bytes: number) => map.set(key, (map.get(key) ?? 0) + bytes);
for (const stack: ProfileNode[] = [profile.head]; stack.length > 0; ) {
  const node = stack.pop()!;
  const { functionName, url, lineNumber } = node.callFrame;
  total += node.selfSize;
  add(byOwner, ownerOf(url), node.selfSize);
  add(byFunction, `${functionName || '(anonymous)'}  ${url.split('/').slice(-2).join('/')}:${lineNumber}`, node.selfSize);
  stack.push(...(node.children ?? []));
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1).padStart(8);
const share = (bytes: number) => `${((100 * bytes) / total).toFixed(1).padStart(5)} %`;
console.log(`allocated: ${mb(total)} MB${requests ? `, ${Math.round(total / Number(requests) / 1000)} KB per request over ${requests}` : ''}\n`);
for (const [owner, bytes] of [...byOwner].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${mb(bytes)} MB ${share(bytes)}  ${owner}`);
console.log('');
for (const [fn, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${mb(bytes)} MB ${share(bytes)}  ${fn}`);
