/**
 * Classifier micro-benchmark: latency per message on typical chat, big pastes (chat, and logs and code
 * dense in rule literals) and adversarial floods, the naive V8 RegExp baseline, linearity with the whole
 * text read, and memory over many calls; for the default engine (re2js) and re2-wasm. The classifiers
 * measured keep no cache of recent messages: every call classifies. Prints figures and a PASS/MISS "targets" section; asserts
 * nothing and stops by itself: every case is bounded by a run count and a time cap, the whole run by a
 * wall-clock deadline.
 *
 *   node --expose-gc dist/bench/classify.js [--quick]
 *
 * --quick cuts run counts and time caps about 10x, for a smoke run.
 * --full-memory lets the memory phases run all 1,000,000 classifications whatever the time (minutes,
 * not seconds, while a typical call costs tens of µs); without it they stop at the deadline.
 *
 * Each engine's timing, linearity and memory phases run in their own child process (this file, started
 * with --job=...), so one engine's heap, JIT state or failure cannot colour another's figures. That
 * matters for re2-wasm: its WebAssembly heap is fixed at 16 MB and compiled patterns are never freed, so
 * a second classifier (the one with the raised scan budget) or an earlier out-of-memory abort in the same
 * process would decide the outcome. The naive baseline runs in the parent.
 */
import { fork } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClassifier, DEFAULT_SCAN_BUDGET, defaultRuleSet, ENGINES, type Classifier, type EngineName } from '../src/index.js';
import { naiveClassify } from './naive.js';

// ---------------------------------------------------------------------------------------------------
// Settings

const QUICK = process.argv.includes('--quick');
const FULL_MEMORY = process.argv.includes('--full-memory');
const SCALE = QUICK ? 0.1 : 1;
/** Timed calls every case gets even past its time cap (a single call may be slower than the cap). */
const MIN_SAMPLES = QUICK ? 1 : 3;
const ENGINE_NAMES: readonly EngineName[] = ['re2js', 're2-wasm'];

/** "1 MB" here is 2^20 UTF-16 units: the unit the scan budget counts in. */
const MB = 1 << 20;
const KB10 = 10 * 1024;
const LINEAR_BIG = MB;
const LINEAR_SMALL = Math.round(MB / 10);
const LINEAR_BUDGET = 2 * 1024 * 1024;

const MEMORY_TARGET_CALLS = Math.round(1_000_000 * SCALE);
/**
 * "Flat": heapUsed after a forced gc grows by at most this between the first and last reading (under
 * 5 bytes per call over 1,000,000 calls). rss is printed but not judged: it follows V8's and the
 * engines' allocators more than live data.
 */
const FLAT_HEAP_MB = 5;

/** Typical chat, rules and scorer together. */
const TARGET_TYPICAL_MEDIAN_US = 10;
const TARGET_NAIVE_RATIO = 0.5;
/** A 10 KB paste of logs and code dense in rule literals (median). */
const TARGET_DENSE_MS = 2;
const TARGET_1MB_MS = 10;
const TARGET_ADVERSARIAL_MS = 20;
const TARGET_LINEAR_RATIO = 12;

/** Warm-up calls, timed calls and time cap (ms) of one case in a full run; --quick takes about a tenth. */
interface Plan { readonly warm: number; readonly runs: number; readonly capMs: number }
const plan = (warm: number, runs: number, capMs: number): Plan => ({
  warm: Math.max(1, Math.round(warm * SCALE)),
  runs: Math.max(MIN_SAMPLES, Math.round(runs * SCALE)),
  capMs: capMs * SCALE,
});
const PLANS = {
  // Ten passes over the typical set before timing: the optimising compiler takes thousands of calls
  // to reach the code a long-running gateway runs (with 1000, the first case measured part warm-up).
  typical: plan(5000, 3000, 6000),
  naive: plan(20_000, 100_000, 2000),
  kb10: plan(32, 320, 2000),
  dense: plan(32, 320, 2000),
  mb1: plan(3, 30, 2000),
  adversarial: plan(2, 30, 1200),
  linear: plan(2, 10, 1500),
};
/** Wall-clock budget of the whole process tree; the memory phases share what the timings leave. */
const DEADLINE_MS = QUICK ? 14_000 : 78_000;
const MEMORY_MIN_MS = QUICK ? 1000 : 6000;
/** With --full-memory: a safety bound only. */
const FULL_MEMORY_CAP_MS = 30 * 60_000;

// ---------------------------------------------------------------------------------------------------
// Clock, statistics, formatting

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;
const argValue = (name: string): string | undefined => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
/** Shared by parent and children as a Date.now() instant. */
const DEADLINE_AT = Number(argValue('deadline') ?? Date.now() + DEADLINE_MS);
const timeLeft = (): number => DEADLINE_AT - Date.now();

type Gc = () => void;
const exposedGc = (globalThis as { gc?: unknown }).gc;
const gc: Gc | null = typeof exposedGc === 'function' ? (exposedGc as Gc) : null;

let sink = 0;
function consume(value: unknown): void {
  // Keep every result alive so no call is optimised away.
  if (value !== null && typeof value === 'object') sink = (sink + Object.keys(value).length) | 0;
  else sink = (sink + 1) | 0;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

function median(sorted: readonly number[]): number {
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function num(value: number, digits?: number): string {
  if (!Number.isFinite(value)) return 'n/a';
  const fraction = digits ?? (Math.abs(value) < 10 ? 2 : Math.abs(value) < 1000 ? 1 : 0);
  return value.toLocaleString('en-US', { minimumFractionDigits: fraction, maximumFractionDigits: fraction });
}

const int = (value: number): string => Math.round(value).toLocaleString('en-US');
const mb = (bytes: number): string => `${num(bytes / (1024 * 1024), 1)} MB`;
const signedMb = (bytes: number): string => `${bytes >= 0 ? '+' : '-'}${num(Math.abs(bytes) / (1024 * 1024), 1)} MB`;
const pad = (text: string, width: number): string => text.padEnd(width);
const lpad = (text: string, width: number): string => text.padStart(width);

const COLUMNS: readonly number[] = [34, 11, 7, 13, 13, 11];
function row(cells: readonly string[]): string {
  return cells.map((cell, index) => (index === 0 ? pad(cell, COLUMNS[0] ?? 34) : lpad(cell, COLUMNS[index] ?? 10))).join(' ');
}

function shortError(error: unknown): string {
  const issues = (error as { issues?: unknown } | null)?.issues;
  if (error instanceof Error && Array.isArray(issues) && issues.length > 0) {
    const first = String(issues[0]);
    return `${error.name}, ${issues.length} pattern(s) failed to compile; first: ${first.length > 150 ? `${first.slice(0, 147)}...` : first}`;
  }
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const line = text.split('\n')[0] ?? text;
  return line.length > 150 ? `${line.slice(0, 147)}...` : line;
}

// ---------------------------------------------------------------------------------------------------
// Inputs (deterministic: every process builds the same ones)

interface CorpusMessage { readonly text: string; readonly expected: string }

function corpusPath(): string {
  const candidates = [
    resolve(process.cwd(), 'test/corpus/messages.jsonl'),
    fileURLToPath(new URL('../../test/corpus/messages.jsonl', import.meta.url)),
    fileURLToPath(new URL('../test/corpus/messages.jsonl', import.meta.url)),
  ];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new Error(`test/corpus/messages.jsonl not found (looked in ${candidates.join(', ')})`);
  return found;
}

function loadCorpus(): CorpusMessage[] {
  return readFileSync(corpusPath(), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as CorpusMessage);
}

/** mulberry32: a small seeded PRNG. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(items: readonly T[], random: () => number): T => items[Math.floor(random() * items.length)] as T;

/** Exactly `units` UTF-16 units of repeated pieces, never ending inside a surrogate pair (a space instead). */
function fillTo(units: number, next: () => string): string {
  const parts: string[] = [];
  let length = 0;
  while (length < units) {
    const piece = next();
    parts.push(piece);
    length += piece.length;
  }
  let text = parts.join('').slice(0, units);
  const last = text.charCodeAt(text.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) text = `${text.slice(0, -1)} `;
  return text;
}

/** A long paste of corpus messages (all lengths) in a seeded order, blank lines between them. */
function chatDocument(units: number, corpus: readonly CorpusMessage[], seed: number): string {
  const random = prng(seed);
  return fillTo(units, () => `${pick(corpus, random).text}\n\n`);
}

/**
 * Lines of a pasted terminal session, build log, stack trace and code: each holds literals of several
 * pattern rules (paths, file names, URLs, commands, error markers), so nearly every pattern runs and
 * most match, the case where finding what each rule matched costs the most.
 */
const PASTE_LINES = [
  '$ git status',
  '$ git push origin feature/login-form --force',
  '$ rm -rf node_modules && npm install',
  '$ docker ps -a | grep web',
  'npm ERR! code ELIFECYCLE',
  'npm ERR! errno 1',
  'Traceback (most recent call last):',
  '  File "/usr/lib/python3/dist-packages/app/main.py", line 12, in <module>',
  '    at Object.<anonymous> (/home/dev/app/src/index.ts:12:5)',
  '    at Module._compile (node:internal/modules/cjs/loader:1105:14)',
  'src/components/Button.tsx(12,5): error TS2345: Argument of type string is not assignable',
  'fatal: not a git repository (or any of the parent directories): .git',
  'panic: runtime error: index out of range [3] with length 3',
  'GET https://api.example.com/v1/users?page=2 500 (Internal Server Error)',
  'see www.example.org/docs/setup for details',
  'Connecting to localhost:5432 ... connection refused',
  'cat ~/.bashrc | head -n 5',
  'C:\\Users\\dev\\project\\build.log written',
  './scripts/deploy.sh --env production',
  'warning: /etc/nginx/nginx.conf line 4: unknown directive',
  'const config = require("./lib/config.js"); // TODO fix this before release',
  'import { readFile } from "node:fs/promises"; export default function load(path) { return readFile(path, "utf8"); }',
  'kubectl get pods -n prod | grep -v Running',
  'git merge main into release/1.2 && git push',
  'Segmentation fault (core dumped)',
  'Command failed with exit code 1: tsc -p tsconfig.json',
  'BUILD FAILED in 3s',
  'Exception in thread "main" java.lang.NullPointerException at com.example.App.main(App.java:14)',
  'error[E0382]: borrow of moved value: `config`',
  'sudo systemctl restart nginx && journalctl -u nginx --since today',
  'curl -X POST http://localhost:8080/api/jobs -d @payload.json',
  'echo $(whoami) > /tmp/out.txt; ls -la /var/log',
  'tail -f app.log | grep ERROR',
  'pip install -r requirements.txt',
  '```',
  'SELECT * FROM users WHERE id = 1; -- from db/migrations/0042_add_invoice_fields.sql',
  '**/*.test.ts and src/**/*.spec.ts are ignored in .gitignore and .eslintrc.json',
];

/** A pasted log and code of about `units` UTF-16 units, lines in a seeded order. */
function densePaste(units: number, seed: number): string {
  const random = prng(seed);
  return fillTo(units, () => `${pick(PASTE_LINES, random)}\n`);
}

const PROSE_SENTENCES = [
  'The morning light came slowly over the hills and settled on the quiet village below.',
  'Most of the people in town had lived there for years, and they knew each other well.',
  'In the spring the river rose, and the children watched the water carry branches past the mill.',
  'Her grandmother kept a small garden with tomatoes, beans and a row of tall sunflowers.',
  'Nobody was quite sure who had painted the old bridge blue, but everyone liked it that way.',
  'On market days the square filled with carts of apples, bread, cheese and bright wool.',
  'The teacher told them stories about sailors, storms and islands that were not on any map.',
  'By late afternoon the wind had dropped and the smell of woodsmoke drifted along the lane.',
  'He wrote long letters to his brother, who had moved to a city by the sea many years ago.',
  'When the first snow fell, the whole valley became silent, white and strangely bright.',
  'They walked together along the shore, talking about books, music and the people they missed.',
  'The library was small, but it had a window seat where you could read for hours undisturbed.',
];

function prose(units: number, seed: number): string {
  const random = prng(seed);
  return fillTo(units, () => `${pick(PROSE_SENTENCES, random)}${random() < 0.15 ? '\n\n' : ' '}`);
}

const EMOJI = ['😀', '🚀', '👍🏽', '👨‍👩‍👧‍👦', '🇺🇸', '❤️', '🧑‍💻', '🔥', '✅', '🎉', '🏳️‍🌈', '🤦🏻‍♀️', ' ', '👀', '💯'];

function adversarialInputs(): { name: string; text: string }[] {
  const random = prng(7);
  return [
    { name: '"a" x 1M', text: 'a'.repeat(MB) },
    { name: 'zero-width space flood', text: '\u200b'.repeat(MB) },
    { name: 'combining marks "a\\u0301"', text: 'a\u0301'.repeat(MB / 2) },
    { name: 'deep path "a/" x 512K', text: 'a/'.repeat(MB / 2) },
    { name: '"and/or " flood', text: fillTo(MB, () => 'and/or ') },
    { name: '"fix " flood', text: 'fix '.repeat(MB / 4) },
    { name: '"```" flood', text: fillTo(MB, () => '```') },
    { name: 'mixed emoji', text: fillTo(MB, () => pick(EMOJI, random)) },
    // The characters NFKC expands most: U+FDFA is 18 letters, U+FDFB 8, U+3300 four katakana.
    { name: 'U+FDFA flood (16 Ki)', text: '\ufdfa'.repeat(16 * 1024) },
    { name: 'U+FDFA flood', text: '\ufdfa'.repeat(MB) },
    { name: 'U+FDFB, U+3300, U+2167 flood', text: fillTo(MB, () => pick(['\ufdfb', '\u3300', '\u2167', ' '], random)) },
    { name: 'letters spaced out "p u s h  "', text: fillTo(MB, () => 'p u s h  ') },
  ];
}

const typicalOf = (corpus: readonly CorpusMessage[]): CorpusMessage[] => corpus.filter((line) => line.text.length <= 200);

// ---------------------------------------------------------------------------------------------------
// Measuring

interface Stats {
  readonly n: number;
  readonly median: number; // µs
  readonly p99: number; // µs
  readonly capped: boolean; // stopped by the time cap before the planned runs
}

/**
 * Calls `fn` on the inputs in turn: `warm` untimed calls (at most a third of the cap), then up to
 * `runs` calls each timed on its own with process.hrtime.bigint, stopping at the time cap but never
 * with fewer than MIN_SAMPLES.
 */
function measure<R>(fn: (text: string) => R, inputs: readonly string[], planned: Plan, onFirst?: (result: R) => void): Stats {
  const cap = Math.max(50, Math.min(planned.capMs, timeLeft()));
  const started = nowMs();
  let next = 0;
  const input = (): string => {
    const text = inputs[next % inputs.length] as string;
    next += 1;
    return text;
  };
  for (let i = 0; i < planned.warm && (i === 0 || nowMs() - started < cap / 3); i += 1) {
    const result = fn(input());
    if (i === 0) onFirst?.(result);
    consume(result);
  }
  next = 0;
  const samples: number[] = [];
  let capped = false;
  for (let i = 0; i < planned.runs; i += 1) {
    if (samples.length >= MIN_SAMPLES && nowMs() - started > cap) {
      capped = true;
      break;
    }
    const text = input();
    const t0 = process.hrtime.bigint();
    const result = fn(text);
    const t1 = process.hrtime.bigint();
    consume(result);
    samples.push(Number(t1 - t0) / 1000);
  }
  samples.sort((a, b) => a - b);
  return { n: samples.length, median: median(samples), p99: quantile(samples, 0.99), capped };
}

function timerOverheadUs(): number {
  const samples: number[] = [];
  for (let i = 0; i < 20_000; i += 1) {
    const t0 = process.hrtime.bigint();
    const t1 = process.hrtime.bigint();
    samples.push(Number(t1 - t0) / 1000);
  }
  return median(samples.sort((a, b) => a - b));
}

// ---------------------------------------------------------------------------------------------------
// Child jobs: one engine, one phase, one process; the result goes back over IPC as JSON.

type Phase = 'timing' | 'linear' | 'memory';

interface CaseOut {
  readonly name: string;
  readonly lengthLabel: string;
  readonly stats: Stats | null;
  readonly error?: string;
  readonly scanned?: number;
  readonly length?: number;
  /** An earlier case of this process failed: the engine may be in a damaged state (re2-wasm aborts). */
  readonly afterError: boolean;
}

interface MemoryReading { readonly calls: number; readonly heapUsed: number; readonly heapTotal: number; readonly rss: number }
interface MemoryOut {
  readonly readings: MemoryReading[];
  readonly done: number;
  readonly target: number;
  readonly elapsedMs: number;
  readonly capMs: number;
  readonly error?: string;
}

interface JobOut {
  readonly engine: EngineName;
  readonly phase: Phase;
  readonly setupError?: string;
  readonly typical?: CaseOut;
  readonly big: CaseOut[]; // 10 KB and 1 MB rows
  readonly adversarial: CaseOut[];
  readonly linear: { label: string; small: CaseOut; big: CaseOut }[];
  readonly memory?: MemoryOut;
  readonly gc: boolean;
}

type Classify = Classifier['classify'];

function caseRunner() {
  let failed = false;
  return (name: string, lengthLabel: string, classify: Classify, inputs: readonly string[], planned: Plan): CaseOut => {
    const afterError = failed;
    try {
      let scan: { scanned: number; length: number } | undefined;
      const stats = measure(classify, inputs, planned, (first) => {
        scan = first.scan;
      });
      return { name, lengthLabel, stats, scanned: scan?.scanned, length: scan?.length, afterError };
    } catch (error) {
      failed = true;
      return { name, lengthLabel, stats: null, error: shortError(error), afterError };
    }
  };
}

function reading(calls: number): MemoryReading {
  gc?.();
  const usage = process.memoryUsage();
  return { calls, heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, rss: usage.rss };
}

function memoryPhase(classifier: Classifier, messages: readonly string[], target: number, capMs: number): MemoryOut {
  const readings: MemoryReading[] = [];
  const started = nowMs();
  let done = 0;
  try {
    for (const message of messages) consume(classifier.classify(message)); // warm-up pass
    readings.push(reading(0));
    const loopStart = nowMs();
    // Readings at each quarter of the target, and at least every quarter of the time cap.
    const checkpointEvery = Math.max(1, Math.floor(target / 4));
    let nextCheckpoint = checkpointEvery;
    let lastCheckpoint = loopStart;
    while (done < target) {
      consume(classifier.classify(messages[done % messages.length] as string));
      done += 1;
      if (done % 128 === 0 && done < target) {
        const now = nowMs();
        if (now - started > capMs) break;
        if (done >= nextCheckpoint || now - lastCheckpoint > capMs / 4) {
          readings.push(reading(done));
          lastCheckpoint = nowMs();
          while (nextCheckpoint <= done) nextCheckpoint += checkpointEvery;
        }
      }
    }
    readings.push(reading(done));
    return { readings, done, target, elapsedMs: nowMs() - loopStart, capMs };
  } catch (error) {
    return { readings, done, target, elapsedMs: nowMs() - started, capMs, error: shortError(error) };
  }
}

function runJob(engine: EngineName, phase: Phase, capMs: number): JobOut {
  const out: JobOut = { engine, phase, big: [], adversarial: [], linear: [], gc: gc !== null };
  const corpus = loadCorpus();
  const typical = typicalOf(corpus).map((line) => line.text);
  const runCase = caseRunner();

  if (phase === 'linear') {
    let wide: Classifier;
    try {
      wide = createClassifier({ engine, scanBudget: LINEAR_BUDGET, cacheEntries: 0 });
    } catch (error) {
      return { ...out, setupError: `createClassifier({ engine: '${engine}', scanBudget: ${LINEAR_BUDGET} }) threw ${shortError(error)}` };
    }
    const classify: Classify = (text) => wide.classify(text);
    for (const [label, big] of [['plain prose', prose(LINEAR_BIG, 400)], ['"fix " flood', 'fix '.repeat(LINEAR_BIG / 4)]] as const) {
      const small = big.slice(0, LINEAR_SMALL);
      const smallOut = runCase(`  ${label}, 100 KB`, int(small.length), classify, [small], PLANS.linear);
      const bigOut = runCase(`  ${label}, 1 MB`, int(big.length), classify, [big], PLANS.linear);
      out.linear.push({ label, small: smallOut, big: bigOut });
    }
    return out;
  }

  let classifier: Classifier;
  try {
    // Without the cache of recent messages: every call classifies (the typical set would fit in it).
    classifier = createClassifier({ engine, cacheEntries: 0 });
  } catch (error) {
    return { ...out, setupError: `createClassifier({ engine: '${engine}' }) threw ${shortError(error)}` };
  }
  const classify: Classify = (text) => classifier.classify(text);

  if (phase === 'memory') return { ...out, memory: memoryPhase(classifier, typical, MEMORY_TARGET_CALLS, capMs) };

  const typicalOut = runCase(`typical chat (${typical.length} msgs)`, '≤200', classify, typical, PLANS.typical);
  // The scorer's share of the time: the same messages through the rules alone.
  const rulesOnly = createClassifier({ engine, scorer: null, context: null, cacheEntries: 0 });
  out.big.push(runCase('  the same, rules alone', '≤200', (text) => rulesOnly.classify(text), typical, PLANS.typical));
  const kb10Docs = Array.from({ length: 16 }, (_, index) => chatDocument(KB10, corpus, 100 + index));
  out.big.push(runCase(`10 KB chat pastes (${kb10Docs.length} docs)`, int(KB10), classify, kb10Docs, PLANS.kb10));
  const denseDocs = Array.from({ length: 16 }, (_, index) => densePaste(KB10, 300 + index));
  out.big.push(runCase(`10 KB trigger-dense pastes (${denseDocs.length})`, int(KB10), classify, denseDocs, PLANS.dense));
  const mb1Docs = Array.from({ length: 3 }, (_, index) => chatDocument(MB, corpus, 200 + index));
  out.big.push(runCase(`1 MB chat pastes (${mb1Docs.length} docs)`, int(MB), classify, mb1Docs, PLANS.mb1));
  out.big.push(runCase('1 MB plain prose', int(MB), classify, [prose(MB, 300)], PLANS.mb1));
  for (const { name, text } of adversarialInputs()) out.adversarial.push(runCase(`  ${name}`, int(text.length), classify, [text], PLANS.adversarial));
  return { ...out, typical: typicalOut };
}

// ---------------------------------------------------------------------------------------------------
// Parent: start the jobs one at a time, print as results arrive, then the targets.

interface JobRun { readonly out: JobOut | null; readonly failure?: string; readonly stderr: string[] }

function startJob(engine: EngineName, phase: Phase, capMs: number): Promise<JobRun> {
  return new Promise((resolveRun) => {
    const args = [`--job=${engine},${phase}`, `--cap=${Math.round(capMs)}`, `--deadline=${DEADLINE_AT}`, ...(QUICK ? ['--quick'] : []), ...(FULL_MEMORY ? ['--full-memory'] : [])];
    const child = fork(fileURLToPath(import.meta.url), args, { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
    let out: JobOut | null = null;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('message', (message) => {
      out = message as JobOut;
    });
    // A safety net only: every phase bounds itself long before this.
    const killer = setTimeout(() => child.kill('SIGKILL'), Math.min(Math.max(capMs, timeLeft()), FULL_MEMORY_CAP_MS) + 60_000);
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      const lines = stderr.split('\n').filter((line) => line.trim() !== '');
      const failure = out === null ? `child exited (code ${code}, signal ${signal}) without a result` : undefined;
      resolveRun(failure ? { out, failure, stderr: lines } : { out, stderr: lines });
    });
  });
}

function printStderr(lines: readonly string[]): void {
  if (lines.length === 0) return;
  const counts = new Map<string, number>();
  for (const line of lines) {
    const key = line.length > 140 ? `${line.slice(0, 137)}...` : line;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  console.log(`  stderr of this phase (${lines.length} line(s), duplicates counted):`);
  for (const [line, count] of [...counts].slice(0, 6)) console.log(`    ${count > 1 ? `${count}x ` : ''}${line}`);
  if (counts.size > 6) console.log(`    ... ${counts.size - 6} more distinct line(s)`);
}

function printCase(result: CaseOut): void {
  const mark = result.afterError ? ' †' : '';
  if (!result.stats) {
    console.log(`${row([result.name + mark, result.lengthLabel, '-', 'error', '', ''])}  ${result.error ?? ''}`);
    return;
  }
  const scanned = result.scanned === undefined ? '' : result.length !== undefined && result.scanned >= result.length ? 'all' : int(result.scanned);
  const runs = `${result.stats.n}${result.stats.capped ? '*' : ''}`;
  console.log(row([result.name + mark, result.lengthLabel, runs, num(result.stats.median), num(result.stats.p99), scanned]));
}

const fullyRead = (result: CaseOut): boolean => result.scanned !== undefined && result.length !== undefined && result.scanned >= result.length;
const ratioOf = (big: CaseOut, small: CaseOut): number => (big.stats?.median ?? Number.NaN) / (small.stats?.median ?? Number.NaN);

function printJob(run: JobRun): void {
  const out = run.out;
  if (!out) {
    console.log(`  ${run.failure ?? 'no result'}`);
    printStderr(run.stderr);
    return;
  }
  if (out.setupError) console.log(`  unavailable: ${out.setupError}`);
  if (out.phase === 'timing' && !out.setupError) {
    console.log(row(['case', 'length', 'runs', 'median µs', 'p99 µs', 'scanned']));
    if (out.typical) printCase(out.typical);
    for (const result of out.big) printCase(result);
    console.log('adversarial (1 MB each unless named)');
    for (const result of out.adversarial) printCase(result);
  }
  if (out.phase === 'linear' && !out.setupError) {
    for (const { small, big } of out.linear) {
      printCase(small);
      printCase(big);
      console.log(`    ${num((big.length ?? Number.NaN) / (small.length ?? Number.NaN), 1)}x input -> ${num(ratioOf(big, small), 1)}x time${fullyRead(big) || !big.stats ? '' : ` (the engine read only ${int(big.scanned ?? 0)} units of the 1 MB text)`}`);
    }
  }
  if (out.phase === 'memory' && out.memory) printMemory(out.memory);
  if ([out.typical, ...out.big, ...out.adversarial, ...out.linear.flatMap(({ small, big }) => [small, big])].some((result) => result?.afterError)) {
    console.log('  † measured after an earlier case of this phase failed in the same process: the engine may be damaged (figures unreliable)');
  }
  printStderr(run.stderr);
}

function printMemory(memory: MemoryOut): void {
  for (const point of memory.readings) {
    const label = point.calls === 0 ? 'after warm-up' : `after ${int(point.calls)}`;
    console.log(`  ${pad(label, 18)} heapUsed ${lpad(mb(point.heapUsed), 10)}   heapTotal ${lpad(mb(point.heapTotal), 10)}   rss ${lpad(mb(point.rss), 10)}`);
  }
  const first = memory.readings[0];
  const last = memory.readings[memory.readings.length - 1];
  if (first && last && memory.readings.length > 1) {
    console.log(`  growth             heapUsed ${lpad(signedMb(last.heapUsed - first.heapUsed), 10)}   heapTotal ${lpad(signedMb(last.heapTotal - first.heapTotal), 10)}   rss ${lpad(signedMb(last.rss - first.rss), 10)}   over ${int(last.calls)} calls`);
    const rss = memory.readings.map((point) => point.rss);
    console.log(`  rss range over the readings: ${mb(Math.min(...rss))} .. ${mb(Math.max(...rss))}`);
  }
  const rate = memory.done / (memory.elapsedMs / 1000);
  const rest = memory.done < memory.target && rate > 0 ? ` - stopped by the time cap; all ${int(memory.target)} would take ≈ ${num(memory.target / rate / 60, 1)} min at this rate` : '';
  console.log(`  ${int(memory.done)} of ${int(memory.target)} classifications in ${num(memory.elapsedMs / 1000, 1)} s (${int(rate)} calls/s)${rest}`);
  if (memory.error) console.log(`  error: ${memory.error}`);
}

const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');

function targetLines(engine: EngineName, timing: JobRun | undefined, linear: JobRun | undefined, memory: JobRun | undefined, naive: Stats): [string, string, string][] {
  const lines: [string, string, string][] = [];
  const unavailable = (run: JobRun | undefined): string | null => (!run ? 'not run' : run.failure ?? run.out?.setupError ?? null);

  const timingProblem = unavailable(timing);
  const t = timing?.out;
  if (timingProblem || !t) {
    for (const name of [`typical median ≤ ${TARGET_TYPICAL_MEDIAN_US} µs`, `typical ≤ ${TARGET_NAIVE_RATIO}x naive`, `10 KB trigger-dense paste ≤ ${TARGET_DENSE_MS} ms`, `1 MB ≤ ${TARGET_1MB_MS} ms`, `every adversarial ≤ ${TARGET_ADVERSARIAL_MS} ms`]) {
      lines.push([`${engine}: ${name}`, 'MISS', `not measured: ${timingProblem ?? 'no result'}`]);
    }
  } else {
    const typical = t.typical?.stats ?? null;
    const typicalMedian = typical?.median ?? Number.NaN;
    lines.push([`${engine}: typical median ≤ ${TARGET_TYPICAL_MEDIAN_US} µs`, verdict(typicalMedian <= TARGET_TYPICAL_MEDIAN_US), typical ? `median ${num(typicalMedian)} µs, p99 ${num(typical.p99)} µs` : `error: ${t.typical?.error ?? 'no data'}`]);
    const ratio = typicalMedian / naive.median;
    lines.push([`${engine}: typical ≤ ${TARGET_NAIVE_RATIO}x naive (medians)`, verdict(ratio <= TARGET_NAIVE_RATIO), `${num(ratio)}x (${num(typicalMedian)} µs vs naive ${num(naive.median)} µs)`]);

    const dense = t.big.find((result) => result.name.startsWith('10 KB trigger-dense'));
    lines.push([`${engine}: 10 KB trigger-dense paste ≤ ${TARGET_DENSE_MS} ms (median)`, verdict(dense?.stats !== null && dense?.stats !== undefined && dense.stats.median / 1000 <= TARGET_DENSE_MS), dense?.stats ? `median ${num(dense.stats.median / 1000)} ms, p99 ${num(dense.stats.p99 / 1000)} ms` : `error: ${dense?.error ?? 'no data'}`]);

    const mbRows = t.big.filter((result) => result.length === MB || result.lengthLabel === int(MB));
    const mbOk = mbRows.length > 0 && mbRows.every((result) => result.stats !== null && result.stats.p99 / 1000 <= TARGET_1MB_MS);
    lines.push([`${engine}: 1 MB ≤ ${TARGET_1MB_MS} ms (p99)`, verdict(mbOk), mbRows.map((result) => `${result.name.trim()}: ${result.stats ? `p99 ${num(result.stats.p99 / 1000)} ms, median ${num(result.stats.median / 1000)} ms` : 'error'}`).join('; ')]);

    const errored = t.adversarial.filter((result) => !result.stats);
    const over = t.adversarial.filter((result) => result.stats && result.stats.p99 / 1000 > TARGET_ADVERSARIAL_MS);
    const worst = t.adversarial.filter((result) => result.stats).sort((a, b) => (b.stats?.p99 ?? 0) - (a.stats?.p99 ?? 0))[0];
    const details = [
      worst?.stats ? `worst ${worst.name.trim()}: p99 ${num(worst.stats.p99 / 1000)} ms` : 'no timings',
      `${over.length} of ${t.adversarial.length} over`,
      ...(errored.length > 0 ? [`${errored.length} errored (${errored.map((result) => result.name.trim()).join(', ')})`] : []),
      ...(t.adversarial.some((result) => result.afterError) ? ['some measured after an earlier failure (†)'] : []),
    ];
    lines.push([`${engine}: every adversarial ≤ ${TARGET_ADVERSARIAL_MS} ms (p99)`, verdict(errored.length === 0 && over.length === 0 && t.adversarial.length > 0), details.join('; ')]);
  }

  const linearProblem = unavailable(linear);
  if (linearProblem || !linear?.out || linear.out.linear.length === 0) {
    lines.push([`${engine}: 10x input ≤ ${TARGET_LINEAR_RATIO}x time`, 'MISS', `not measured: ${linearProblem ?? 'no data'}`]);
  } else {
    const parts = linear.out.linear.map(({ label, small, big }) => ({ label, ratio: ratioOf(big, small), full: fullyRead(big), ok: big.stats !== null && small.stats !== null }));
    const ok = parts.every((part) => part.ok && part.full && part.ratio <= TARGET_LINEAR_RATIO);
    lines.push([`${engine}: 10x input ≤ ${TARGET_LINEAR_RATIO}x time (medians)`, verdict(ok), parts.map((part) => `${part.label} ${part.ok ? `${num(part.ratio, 1)}x` : 'error'}${part.ok && !part.full ? ' (text not fully read: not a linearity measurement)' : ''}`).join('; ')]);
  }

  const memoryProblem = unavailable(memory);
  const m = memory?.out?.memory;
  const first = m?.readings[0];
  const last = m?.readings[m.readings.length - 1];
  const name = `${engine}: memory flat over ${int(MEMORY_TARGET_CALLS)} calls`;
  if (memoryProblem || !m || !first || !last || m.readings.length < 2) {
    lines.push([name, 'MISS', `not measured: ${memoryProblem ?? m?.error ?? 'no readings'}`]);
  } else {
    const heap = last.heapUsed - first.heapUsed;
    const flat = heap <= FLAT_HEAP_MB * 1024 * 1024;
    const complete = m.done >= m.target && !m.error;
    const detail = `heapUsed ${signedMb(heap)}, rss ${signedMb(last.rss - first.rss)} over ${int(m.done)} calls (flat = heapUsed after gc ≤ +${FLAT_HEAP_MB} MB; rss not judged${memory?.out?.gc ? '' : '; gc NOT exposed, readings noisy'})`;
    lines.push([name, verdict(flat && complete), complete ? detail : `only ${int(m.done)} of ${int(m.target)} calls fit the time cap (--full-memory runs them all), so flatness over ${int(m.target)} is not shown; ${flat ? 'flat' : 'NOT flat'} so far: ${detail}${m.error ? `; error: ${m.error}` : ''}`]);
  }
  return lines;
}

async function main(): Promise<void> {
  const started = nowMs();
  const corpus = loadCorpus();
  const typical = typicalOf(corpus);
  const answers = typical.filter((line) => line.expected === 'ANSWER').length;
  const cpus = os.cpus();

  console.log(`task-router classify bench: ${QUICK ? 'QUICK smoke run (--quick: ~10x fewer runs, shorter caps)' : 'full run'}${FULL_MEMORY ? ', memory phases uncapped (--full-memory)' : ''}`);
  console.log(`node ${process.version} · ${process.platform} ${process.arch} · ${cpus.length} CPU ${cpus[0]?.model.trim() ?? ''}`);
  console.log(`engines: ${ENGINE_NAMES.map((name) => `${name} (maxInput ${ENGINES[name].maxInput >= Number.MAX_SAFE_INTEGER ? 'unbounded' : int(ENGINES[name].maxInput)})`).join(', ')}; default re2js`);
  console.log(`rule set: ${(defaultRuleSet as { rules?: unknown[] }).rules?.length ?? '?'} rules (shipped config/rules.json)`);
  console.log(`scan budget ${int(DEFAULT_SCAN_BUDGET)} UTF-16 units (default; read as head + tail halves); linearity runs at ${int(LINEAR_BUDGET)}`);
  console.log(`gc: ${gc ? 'exposed (--expose-gc); memory readings follow a forced gc' : 'NOT exposed (run node with --expose-gc): memory readings include uncollected garbage'}`);
  console.log(`"1 MB" = ${int(MB)} UTF-16 units; times are µs per call, each call timed alone with process.hrtime.bigint()`);
  console.log(`timer overhead ≈ ${num(timerOverheadUs(), 3)} µs per reading (included); runs marked * were cut short by the time cap`);
  console.log(`each engine phase runs in its own child process; typical set: ${typical.length} corpus messages ≤ 200 chars (${answers} expected ANSWER, ${typical.length - answers} ACTION)`);

  const naive = measure(naiveClassify, typical.map((line) => line.text), PLANS.naive);
  console.log('');
  console.log(row(['naive baseline (bench/naive.ts)', 'length', 'runs', 'median µs', 'p99 µs', '']));
  printCase({ name: 'typical chat, plain V8 RegExp', lengthLabel: '≤200', stats: naive, afterError: false });

  const runs = new Map<string, JobRun>();
  for (const engine of ENGINE_NAMES) {
    console.log('');
    console.log(`== engine ${engine} · scan budget ${int(Math.min(DEFAULT_SCAN_BUDGET, ENGINES[engine].maxInput))} ==`);
    const timing = await startJob(engine, 'timing', 0);
    runs.set(`${engine},timing`, timing);
    printJob(timing);
    console.log(`linearity · ${engine} · scan budget raised to ${int(LINEAR_BUDGET)}${ENGINES[engine].maxInput < LINEAR_BUDGET ? ` (capped by the engine at ${int(ENGINES[engine].maxInput)})` : ''}`);
    const linear = await startJob(engine, 'linear', 0);
    runs.set(`${engine},linear`, linear);
    printJob(linear);
  }

  // The memory phases measure memory, not time, so they run side by side (one per core) and share
  // what is left of the deadline.
  const memoryCapMs = FULL_MEMORY ? FULL_MEMORY_CAP_MS : Math.max(MEMORY_MIN_MS, timeLeft() - 1500);
  const memoryRuns = await Promise.all(ENGINE_NAMES.map((engine) => startJob(engine, 'memory', memoryCapMs)));
  for (const [index, engine] of ENGINE_NAMES.entries()) {
    const memory = memoryRuns[index] as JobRun;
    runs.set(`${engine},memory`, memory);
    console.log('');
    console.log(`== memory · ${engine} · typical messages, target ${int(MEMORY_TARGET_CALLS)} classifications, time cap ${FULL_MEMORY ? 'none (--full-memory)' : `${num(memoryCapMs / 1000, 1)} s`} (engines in parallel) ==`);
    printJob(memory);
  }

  console.log('');
  console.log('== targets ==');
  const lines = ENGINE_NAMES.flatMap((engine) => targetLines(engine, runs.get(`${engine},timing`), runs.get(`${engine},linear`), runs.get(`${engine},memory`), naive));
  const width = Math.max(...lines.map(([name]) => name.length));
  for (const [name, result, detail] of lines) console.log(`${pad(name, width)}  ${result}  ${detail}`);
  if (QUICK) console.log('(quick run: the memory target is a tenth of 1,000,000; figures are a smoke test, not a measurement)');
  console.log('');
  console.log(`done in ${num((nowMs() - started) / 1000, 1)} s`);
}

// ---------------------------------------------------------------------------------------------------

const job = argValue('job');
if (job) {
  const [engine, phase] = job.split(',') as [EngineName, Phase];
  const result = runJob(engine, phase, Number(argValue('cap') ?? 0));
  process.send?.(result, () => process.exit(sink === Number.MIN_SAFE_INTEGER ? 1 : 0));
} else {
  await main();
}
