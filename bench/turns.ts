/**
 * classifyTurns on the gateway benchmark's conversation (bench/bodies.ts): warm, in a loop, and cold,
 * with 4 MiB of memory written before each call, as a gateway's request path leaves the caches
 * between two classifications; then after 3 ms asleep and after 3 ms of a loop that touches no
 * memory, as requests arriving a few ms apart are classified. With --baseline DIR, the same in
 * another built checkout, the two alternated run by run. Each run is its own process. Prints each
 * run's medians and the median of the runs; asserts nothing.
 *
 *   node dist/bench/turns.js [--baseline DIR] [--runs N] [--calls N]
 *
 *   --baseline DIR  a built checkout of task-router (DIR/dist/src/index.js) to compare with
 *   --runs N        runs of each build (default 3)
 *   --calls N       timed calls of each kind per run (default 3000 warm, a third of it cold)
 */
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { conversationTurns } from './bodies.js';

const WARM_UP = 6000;
const EVICT_BYTES = 4 << 20;
const argv = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const at = argv.indexOf(name);
  return at === -1 ? undefined : argv[at + 1];
};
const count = (name: string, fallback: number): number => {
  const value = Number(option(name) ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} takes a whole number of at least 1, got "${option(name)}"`);
  return value;
};

interface RunResult {
  readonly warm: number;
  readonly cold: number;
  readonly asleep: number;
  readonly busy: number;
}

const PAUSE_MS = 3;

const median = (values: number[]): number => values.sort((a, b) => a - b)[values.length >> 1] as number;

/** One run, in this process: the classifier of `dist`, timed call by call. */
async function job(dist: string, calls: number): Promise<RunResult> {
  const { createClassifier } = (await import(pathToFileURL(resolve(dist, 'src/index.js')).href)) as typeof import('../src/index.js');
  const classifier = createClassifier();
  for (let i = 0; i < WARM_UP; i += 1) classifier.classifyTurns(conversationTurns(100_000 + i));
  const time = (i: number): number => {
    const started = performance.now();
    classifier.classifyTurns(conversationTurns(i));
    return (performance.now() - started) * 1000;
  };
  const warm = Array.from({ length: calls }, (_, i) => time(i));
  const evict = new Float64Array(EVICT_BYTES / 8);
  const cold = Array.from({ length: Math.ceil(calls / 3) }, (_, i) => {
    // One write per 64-byte line: every line of 4 MiB passes through the caches.
    for (let at = 0; at < evict.length; at += 8) evict[at] = (evict[at] as number) + 1;
    return time(50_000 + i);
  });
  const asleep: number[] = [];
  for (let i = 0; i < Math.ceil(calls / 3); i += 1) {
    await new Promise((wake) => setTimeout(wake, PAUSE_MS));
    asleep.push(time(60_000 + i));
  }
  const busy = Array.from({ length: Math.ceil(calls / 3) }, (_, i) => {
    const until = performance.now() + PAUSE_MS;
    while (performance.now() < until);
    return time(70_000 + i);
  });
  return { warm: median(warm), cold: median(cold), asleep: median(asleep), busy: median(busy) };
}

function run(dist: string, calls: number): Promise<RunResult> {
  return new Promise((done, fail) => {
    const child = fork(fileURLToPath(import.meta.url), ['--job', dist, '--calls', String(calls)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (message) => done(message as RunResult));
    child.once('exit', (code) => (code === 0 ? undefined : fail(new Error(`the run for ${dist} exited with ${code}`))));
  });
}

const calls = count('--calls', 3000);
if (option('--job') !== undefined) {
  process.send?.(await job(option('--job') as string, calls));
  process.exit(0);
}
const own = resolve(fileURLToPath(new URL('..', import.meta.url)));
const baselineDir = option('--baseline');
const baseline = baselineDir === undefined ? null : resolve(baselineDir, 'dist');
if (baseline !== null && !existsSync(resolve(baseline, 'src/index.js'))) throw new Error(`--baseline needs a built checkout: ${resolve(baseline, 'src/index.js')} not found (npm ci && npm run build there)`);
const builds: [name: string, dist: string][] = baseline === null ? [['this build', own]] : [['baseline', baseline], ['this build', own]];
const results = new Map<string, RunResult[]>(builds.map(([name]) => [name, []]));
const runs = count('--runs', 3);
console.log(`classifyTurns on the gateway benchmark's conversation: ${calls} warm calls; ${Math.ceil(calls / 3)} each cold (4 MiB written before each), after ${PAUSE_MS} ms asleep and after ${PAUSE_MS} ms busy touching no memory; medians in µs`);
const row = (result: RunResult): string => (['warm', 'cold', 'asleep', 'busy'] as const).map((kind) => `${kind} ${result[kind].toFixed(1).padStart(6)}`).join('  ');
for (let round = 1; round <= runs; round += 1) {
  for (const [name, dist] of builds) {
    const result = await run(dist, calls);
    results.get(name)?.push(result);
    console.log(`run ${round}  ${name.padEnd(10)}  ${row(result)}`);
  }
}
for (const [name, list] of results) {
  const of = (kind: keyof RunResult): number => median(list.map((result) => result[kind]));
  console.log(`median of runs  ${name.padEnd(10)}  ${row({ warm: of('warm'), cold: of('cold'), asleep: of('asleep'), busy: of('busy') })}`);
}
