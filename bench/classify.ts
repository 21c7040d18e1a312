/**
 * Classifier micro-benchmark: latency per message on typical chat, big pastes and adversarial floods,
 * the naive V8 RegExp baseline, linearity with the whole text read, and memory over many calls; for the
 * default engine (re2js) and re2-wasm. Prints figures and a PASS/MISS "targets" section; asserts
 * nothing and stops by itself (every case is bounded by a run count and a time cap, the whole run by a
 * deadline).
 *
 *   node --expose-gc dist/bench/classify.js [--quick]
 *
 * --quick cuts run counts and time caps about 10x, for a smoke run.
 */
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClassifier, DEFAULT_SCAN_BUDGET, type Classifier, type EngineName } from '../src/index.js';
import { naiveClassify } from './naive.js';

// ---------------------------------------------------------------------------------------------------
// Settings

const QUICK = process.argv.includes('--quick');
const SCALE = QUICK ? 0.1 : 1;
/** Timed calls every case gets even past its time cap (a case may be slower than its whole cap). */
const MIN_SAMPLES = QUICK ? 1 : 3;
const ENGINES: readonly EngineName[] = ['re2js', 're2-wasm'];

/** "1 MB" here is 2^20 UTF-16 units: the unit the scan budget counts in. */
const MB = 1 << 20;
const KB10 = 10 * 1024;
const LINEAR_BIG = MB;
const LINEAR_SMALL = Math.round(MB / 10);
const LINEAR_BUDGET = 2 * 1024 * 1024;

const MEMORY_TARGET_CALLS = 1_000_000;
/** "Flat": growth of heapUsed (after a forced gc) and of rss between the two readings at most this. */
const FLAT_HEAP_MB = 5;
const FLAT_RSS_MB = 25;

const TARGET_TYPICAL_MEDIAN_US = 5;
const TARGET_NAIVE_RATIO = 0.5;
const TARGET_1MB_MS = 15;
const TARGET_ADVERSARIAL_MS = 20;
const TARGET_LINEAR_RATIO = 12;

/** Counts: [warm-up calls, measured calls, time cap ms] for a full run; --quick takes about a tenth. */
interface Plan { readonly warm: number; readonly runs: number; readonly capMs: number }
const plan = (warm: number, runs: number, capMs: number): Plan => ({
  warm: Math.max(1, Math.round(warm * SCALE)),
  runs: Math.max(MIN_SAMPLES, Math.round(runs * SCALE)),
  capMs: capMs * SCALE,
});
const PLANS = {
  typical: plan(1000, 3000, 9000),
  naive: plan(20_000, 100_000, 3000),
  kb10: plan(32, 320, 3000),
  mb1: plan(3, 30, 3000),
  adversarial: plan(2, 30, 2500),
  linear: plan(2, 10, 3000),
};
/** The whole process stops starting new work after this (the memory phases share what is left). */
const DEADLINE_MS = QUICK ? 12_000 : 75_000;
const MEMORY_MIN_MS = QUICK ? 1000 : 10_000;

// ---------------------------------------------------------------------------------------------------
// Clock, statistics, formatting

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6;
const START_MS = nowMs();
const timeLeft = (): number => DEADLINE_MS - (nowMs() - START_MS);

type Gc = () => void;
const exposedGc = (globalThis as { gc?: unknown }).gc;
const gc: Gc | null = typeof exposedGc === 'function' ? (exposedGc as Gc) : null;

let sink = 0;
function consume(value: unknown): void {
  // Keep results alive so no call is optimised away.
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

// ---------------------------------------------------------------------------------------------------
// Inputs

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

/** Deterministic PRNG (mulberry32), so every run sees the same inputs. */
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

/** Exactly `units` UTF-16 units from repeated pieces, never splitting a surrogate pair (padded with a space). */
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

/** A long paste made of corpus messages in a seeded order, blank lines between them. */
function chatDocument(units: number, corpus: readonly CorpusMessage[], seed: number): string {
  const random = prng(seed);
  return fillTo(units, () => `${pick(corpus, random).text}\n\n`);
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
  ];
}

// ---------------------------------------------------------------------------------------------------
// Measuring

interface Timing {
  readonly samples: number[]; // µs per call, sorted
  readonly median: number;
  readonly p99: number;
  readonly capped: boolean; // stopped by the time cap before `runs`
}

/**
 * Calls `fn` on the inputs in turn: `warm` calls first, then up to `runs` timed calls (each timed on its
 * own with process.hrtime.bigint), stopping early at the time cap but never with fewer than MIN_SAMPLES samples.
 */
function measure(fn: (text: string) => unknown, inputs: readonly string[], planned: Plan): Timing {
  const cap = Math.max(50, Math.min(planned.capMs, timeLeft()));
  const started = nowMs();
  let next = 0;
  const input = (): string => {
    const text = inputs[next % inputs.length] as string;
    next += 1;
    return text;
  };
  for (let i = 0; i < planned.warm && nowMs() - started < cap / 3; i += 1) consume(fn(input()));
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
  return { samples, median: median(samples), p99: quantile(samples, 0.99), capped };
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
// Report

interface CaseResult {
  readonly name: string;
  readonly timing: Timing | null;
  readonly error?: string;
  readonly scanned?: number;
  readonly length?: number;
}

interface EngineReport {
  readonly engine: EngineName;
  readonly error?: string;
  typical?: CaseResult;
  kb10?: CaseResult;
  mb1?: CaseResult[];
  adversarial: CaseResult[];
  linear: { label: string; small: CaseResult; big: CaseResult; budget: number }[];
  linearError?: string;
  memory?: MemoryResult;
}

function shortError(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const line = text.split('\n')[0] ?? text;
  return line.length > 150 ? `${line.slice(0, 147)}...` : line;
}

function printCase(result: CaseResult, lengthLabel: string, indent = ''): void {
  const name = indent + result.name;
  if (!result.timing) {
    console.log(row([name, lengthLabel, '-', 'error', '', '']) + `  ${result.error ?? ''}`);
    return;
  }
  const scanned = result.scanned === undefined ? '' : result.length !== undefined && result.scanned >= result.length ? 'all' : int(result.scanned);
  const runs = `${result.timing.samples.length}${result.timing.capped ? '*' : ''}`;
  console.log(row([name, lengthLabel, runs, num(result.timing.median), num(result.timing.p99), scanned]));
}

function runCase(name: string, classify: (text: string) => ReturnType<Classifier['classify']>, inputs: readonly string[], planned: Plan): CaseResult {
  try {
    const probe = classify(inputs[0] as string);
    const timing = measure(classify, inputs, planned);
    return { name, timing, scanned: probe.scan.scanned, length: probe.scan.length };
  } catch (error) {
    return { name, timing: null, error: shortError(error) };
  }
}

// ---------------------------------------------------------------------------------------------------
// Memory

interface MemoryReading { readonly calls: number; readonly heapUsed: number; readonly rss: number }
interface MemoryResult {
  readonly readings: MemoryReading[];
  readonly done: number;
  readonly elapsedMs: number;
  readonly capMs: number;
  readonly error?: string;
}

function reading(calls: number): MemoryReading {
  gc?.();
  const usage = process.memoryUsage();
  return { calls, heapUsed: usage.heapUsed, rss: usage.rss };
}

function memoryPhase(classifier: Classifier, messages: readonly string[], target: number, capMs: number): MemoryResult {
  const readings: MemoryReading[] = [];
  const started = nowMs();
  let done = 0;
  try {
    for (const message of messages) consume(classifier.classify(message)); // warm-up pass
    readings.push(reading(0));
    const checkpointEvery = Math.max(1, Math.floor(target / 4));
    const checkpointMs = capMs / 4;
    let lastCheckpoint = nowMs();
    while (done < target) {
      consume(classifier.classify(messages[done % messages.length] as string));
      done += 1;
      if (done % 256 === 0 || done === target) {
        const now = nowMs();
        if (now - started > capMs) break;
        if (done < target && (done % checkpointEvery === 0 || now - lastCheckpoint > checkpointMs)) {
          readings.push(reading(done));
          lastCheckpoint = nowMs();
        }
      }
    }
    readings.push(reading(done));
    return { readings, done, elapsedMs: nowMs() - started, capMs };
  } catch (error) {
    return { readings, done, elapsedMs: nowMs() - started, capMs, error: shortError(error) };
  }
}

// ---------------------------------------------------------------------------------------------------
// Main

function main(): void {
  const corpus = loadCorpus();
  const typical = corpus.filter((line) => line.text.length <= 200);
  const typicalTexts = typical.map((line) => line.text);
  const answers = typical.filter((line) => line.expected === 'ANSWER').length;
  const kb10Docs = Array.from({ length: 16 }, (_, index) => chatDocument(KB10, corpus, 100 + index));
  const mb1Docs = Array.from({ length: 3 }, (_, index) => chatDocument(MB, corpus, 200 + index));
  const mb1Prose = prose(MB, 300);
  const adversarial = adversarialInputs();
  const linearProse = prose(LINEAR_BIG, 400);
  const linearFix = 'fix '.repeat(LINEAR_BIG / 4);
  const overhead = timerOverheadUs();

  const cpus = os.cpus();
  console.log(`task-router classify bench: ${QUICK ? 'QUICK smoke run (--quick, ~10x fewer runs)' : 'full run'}`);
  console.log(`node ${process.version} · ${process.platform} ${process.arch} · ${cpus.length} CPU ${cpus[0]?.model.trim() ?? ''}`);
  console.log(`engines: ${ENGINES.join(', ')} (default re2js) · scan budget ${int(DEFAULT_SCAN_BUDGET)} UTF-16 units (default; head+tail halves)`);
  console.log(`gc: ${gc ? 'exposed (--expose-gc): memory readings follow a forced gc' : 'NOT exposed (run with node --expose-gc): memory readings include uncollected garbage'}`);
  console.log(`"1 MB" = ${int(MB)} UTF-16 units; times are per call, µs, timed one call at a time with process.hrtime.bigint()`);
  console.log(`timer overhead ≈ ${num(overhead, 3)} µs per reading (included); runs marked * were cut short by the time cap`);
  console.log(`typical set: ${typical.length} corpus messages ≤ 200 chars (${answers} expected ANSWER, ${typical.length - answers} ACTION), in corpus order`);

  // Naive baseline: engine-independent, plain V8 RegExp.
  const naive = measure(naiveClassify, typicalTexts, PLANS.naive);
  console.log('');
  console.log(row(['naive baseline (bench/naive.ts)', 'length', 'runs', 'median µs', 'p99 µs', '']));
  printCase({ name: 'typical chat, plain V8 RegExp', timing: naive }, '≤200');

  const reports: EngineReport[] = [];
  const classifiers = new Map<EngineName, Classifier>();
  for (const engine of ENGINES) {
    console.log('');
    console.log(`== engine ${engine} · scan budget ${int(DEFAULT_SCAN_BUDGET)} ==`);
    let classifier: Classifier;
    try {
      classifier = createClassifier({ engine });
    } catch (error) {
      const message = shortError(error);
      console.log(`  unavailable: createClassifier({ engine: '${engine}' }) threw ${message}`);
      reports.push({ engine, error: message, adversarial: [], linear: [] });
      continue;
    }
    classifiers.set(engine, classifier);
    const report: EngineReport = { engine, adversarial: [], linear: [] };
    reports.push(report);
    const classify = (text: string) => classifier.classify(text);

    console.log(row(['case', 'length', 'runs', 'median µs', 'p99 µs', 'scanned']));
    report.typical = runCase(`typical chat (${typicalTexts.length} msgs)`, classify, typicalTexts, PLANS.typical);
    printCase(report.typical, '≤200');
    report.kb10 = runCase(`10 KB chat pastes (${kb10Docs.length} docs)`, classify, kb10Docs, PLANS.kb10);
    printCase(report.kb10, int(KB10));
    report.mb1 = [
      runCase(`1 MB chat pastes (${mb1Docs.length} docs)`, classify, mb1Docs, PLANS.mb1),
      runCase('1 MB plain prose', classify, [mb1Prose], PLANS.mb1),
    ];
    for (const result of report.mb1) printCase(result, int(MB));
    console.log('adversarial, 1 MB each');
    for (const { name, text } of adversarial) {
      const result = runCase(name, classify, [text], PLANS.adversarial);
      report.adversarial.push(result);
      printCase(result, int(text.length), '  ');
    }

    console.log(`linearity, scan budget raised to ${int(LINEAR_BUDGET)} (whole text read where the engine allows)`);
    try {
      const wide = createClassifier({ engine, scanBudget: LINEAR_BUDGET });
      const wideClassify = (text: string) => wide.classify(text);
      for (const [label, big] of [['plain prose', linearProse], ['"fix " flood', linearFix]] as const) {
        const small = big.slice(0, LINEAR_SMALL);
        const smallResult = runCase(`  ${label}, 100 KB`, wideClassify, [small], PLANS.linear);
        const bigResult = runCase(`  ${label}, 1 MB`, wideClassify, [big], PLANS.linear);
        printCase(smallResult, int(small.length));
        printCase(bigResult, int(big.length));
        const ratio = (bigResult.timing?.median ?? Number.NaN) / (smallResult.timing?.median ?? Number.NaN);
        const full = bigResult.scanned !== undefined && bigResult.length !== undefined && bigResult.scanned >= bigResult.length;
        console.log(`    ${num(big.length / small.length, 1)}x input -> ${num(ratio, 1)}x time${full ? '' : ` (engine read only ${int(bigResult.scanned ?? 0)} units of the 1 MB text)`}`);
        report.linear.push({ label, small: smallResult, big: bigResult, budget: LINEAR_BUDGET });
      }
    } catch (error) {
      report.linearError = shortError(error);
      console.log(`  unavailable: createClassifier({ engine: '${engine}', scanBudget: ${LINEAR_BUDGET} }) threw ${report.linearError}`);
    }
  }

  // Memory: the engines that could be built share what is left of the deadline.
  const memoryTarget = Math.round(MEMORY_TARGET_CALLS * SCALE);
  let enginesLeft = classifiers.size;
  for (const report of reports) {
    const classifier = classifiers.get(report.engine);
    if (!classifier) continue;
    const capMs = Math.max(MEMORY_MIN_MS, timeLeft() / enginesLeft);
    enginesLeft -= 1;
    report.memory = memoryPhase(classifier, typicalTexts, memoryTarget, capMs);
    const memory = report.memory;
    const first = memory.readings[0];
    const last = memory.readings[memory.readings.length - 1];
    console.log('');
    console.log(`== memory · ${report.engine} · typical messages, target ${int(memoryTarget)} classifications, time cap ${num(capMs / 1000, 1)} s ==`);
    for (const point of memory.readings) {
      const label = point.calls === 0 ? 'after warm-up' : `after ${int(point.calls)}`;
      console.log(`  ${pad(label, 18)} heapUsed ${lpad(mb(point.heapUsed), 10)}   rss ${lpad(mb(point.rss), 10)}`);
    }
    if (first && last) {
      console.log(`  growth             heapUsed ${lpad(signedMb(last.heapUsed - first.heapUsed), 10)}   rss ${lpad(signedMb(last.rss - first.rss), 10)}   over ${int(last.calls)} calls`);
    }
    const rate = memory.done / (memory.elapsedMs / 1000);
    console.log(`  ${int(memory.done)} of ${int(memoryTarget)} done in ${num(memory.elapsedMs / 1000, 1)} s (${int(rate)} calls/s)${memory.done < memoryTarget ? ` - stopped by the time cap; the full ${int(memoryTarget)} would take ≈ ${num(memoryTarget / rate / 60, 0)} min` : ''}`);
    if (memory.error) console.log(`  error: ${memory.error}`);
  }

  printTargets(reports, naive, memoryTarget);
  console.log('');
  console.log(`done in ${num((nowMs() - START_MS) / 1000, 1)} s (result checksum ${sink})`);
}

function verdict(ok: boolean): string {
  return ok ? 'PASS' : 'MISS';
}

function printTargets(reports: readonly EngineReport[], naive: Timing, memoryTarget: number): void {
  console.log('');
  console.log('== targets ==');
  const lines: [string, string, string][] = [];
  for (const report of reports) {
    const e = report.engine;
    if (report.error) {
      lines.push([`${e}: all targets`, 'MISS', `engine unavailable: ${report.error}`]);
      continue;
    }
    const typical = report.typical?.timing;
    const typicalMedian = typical?.median ?? Number.NaN;
    lines.push([`${e}: typical median ≤ ${TARGET_TYPICAL_MEDIAN_US} µs`, verdict(typicalMedian <= TARGET_TYPICAL_MEDIAN_US), `median ${num(typicalMedian)} µs, p99 ${num(typical?.p99 ?? Number.NaN)} µs`]);
    const ratio = typicalMedian / naive.median;
    lines.push([`${e}: typical ≤ ${TARGET_NAIVE_RATIO}x naive (median)`, verdict(ratio <= TARGET_NAIVE_RATIO), `${num(ratio)}x (${num(typicalMedian)} µs vs naive ${num(naive.median)} µs)`]);

    const big = report.mb1 ?? [];
    const bigWorst = Math.max(...big.map((result) => result.timing?.p99 ?? Number.POSITIVE_INFINITY));
    lines.push([`${e}: 1 MB ≤ ${TARGET_1MB_MS} ms (p99)`, verdict(big.length > 0 && bigWorst / 1000 <= TARGET_1MB_MS), big.map((result) => `${result.name}: p99 ${num((result.timing?.p99 ?? Number.NaN) / 1000)} ms, median ${num((result.timing?.median ?? Number.NaN) / 1000)} ms`).join('; ')]);

    const worst = report.adversarial.reduce<CaseResult | null>((acc, result) => {
      const value = result.timing?.p99 ?? Number.POSITIVE_INFINITY;
      return acc === null || value > (acc.timing?.p99 ?? Number.POSITIVE_INFINITY) ? result : acc;
    }, null);
    const worstP99 = worst?.timing?.p99 ?? Number.POSITIVE_INFINITY;
    const over = report.adversarial.filter((result) => (result.timing?.p99 ?? Number.POSITIVE_INFINITY) / 1000 > TARGET_ADVERSARIAL_MS).length;
    lines.push([`${e}: every adversarial ≤ ${TARGET_ADVERSARIAL_MS} ms (p99)`, verdict(worst !== null && worstP99 / 1000 <= TARGET_ADVERSARIAL_MS), `worst ${worst?.name ?? 'n/a'}: p99 ${num(worstP99 / 1000)} ms; ${over} of ${report.adversarial.length} over`]);

    if (report.linearError || report.linear.length === 0) {
      lines.push([`${e}: 10x input ≤ ${TARGET_LINEAR_RATIO}x time`, 'MISS', `not measured: ${report.linearError ?? 'no data'}`]);
    } else {
      const parts = report.linear.map(({ label, small, big }) => {
        const r = (big.timing?.median ?? Number.NaN) / (small.timing?.median ?? Number.NaN);
        const full = big.scanned !== undefined && big.length !== undefined && big.scanned >= big.length;
        return { label, r, full };
      });
      const ok = parts.every(({ r, full }) => full && r <= TARGET_LINEAR_RATIO);
      lines.push([`${e}: 10x input ≤ ${TARGET_LINEAR_RATIO}x time (median)`, verdict(ok), parts.map(({ label, r, full }) => `${label} ${num(r, 1)}x${full ? '' : ' (text not fully read: not a linearity measurement)'}`).join('; ')]);
    }

    const memory = report.memory;
    const first = memory?.readings[0];
    const last = memory?.readings[memory.readings.length - 1];
    if (!memory || !first || !last) {
      lines.push([`${e}: memory flat over ${int(memoryTarget)}`, 'MISS', 'not measured']);
    } else {
      const heap = last.heapUsed - first.heapUsed;
      const rss = last.rss - first.rss;
      const flat = heap <= FLAT_HEAP_MB * 1024 * 1024 && rss <= FLAT_RSS_MB * 1024 * 1024;
      const complete = memory.done >= memoryTarget && !memory.error;
      const detail = `heapUsed ${signedMb(heap)}, rss ${signedMb(rss)} over ${int(memory.done)} calls (flat = heap ≤ +${FLAT_HEAP_MB} MB and rss ≤ +${FLAT_RSS_MB} MB${gc ? '' : '; gc not exposed, readings noisy'})`;
      lines.push([
        `${e}: memory flat over ${int(memoryTarget)}`,
        verdict(flat && complete),
        complete ? detail : `only ${int(memory.done)} of ${int(memoryTarget)} calls fit the time cap, so not shown; ${flat ? 'flat' : 'NOT flat'} so far: ${detail}`,
      ]);
    }
  }
  const width = Math.max(...lines.map(([name]) => name.length));
  for (const [name, result, detail] of lines) console.log(`${pad(name, width)}  ${result}  ${detail}`);
  if (QUICK) console.log('(quick run: the memory target is scaled to a tenth; figures are a smoke test, not a measurement)');
}

main();
