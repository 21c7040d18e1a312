/**
 * Soak test: the full gateway (startGateway, with decision and memory logs on) in front of a fake
 * upstream, driven with mixed traffic at a bounded rate for a set time, all on 127.0.0.1. Every request
 * has an expected outcome (ANSWER and ACTION routes, streams, upstream 500s, upstream resets before and
 * during a stream, clients that abort mid-stream, and in the long mix malformed bodies); any other
 * outcome is an unexpected error. It prints throughput, outcome counts, latency, RSS, heap and
 * event-loop lag after warm-up, in the middle and at the end, and the gateway's own upstream-error
 * counters, then PASS or FAIL (exit 1): FAIL on any unexpected error, on counters that disagree with
 * what was sent, on a broken log disk that was not noticed, or on RSS moving more than ±15% after warm-up.
 *
 *   npm run soak -- [--duration SECONDS] [--rate REQUESTS_PER_SECOND] [--log-disk ok|full|unwritable]
 *   node --expose-gc dist/bench/soak.js --duration 30
 *
 *   --duration  seconds of traffic (default 300)
 *   --rate      requests started per second (default 100); at most 256 are in flight at once
 *   --log-disk  where decision and memory logs go: ok (a temporary folder, the default), full (every
 *               day file a link to /dev/full: each write fails with ENOSPC) or unwritable (the log folder
 *               sits under a regular file, so it can never be made, even by root)
 *
 * bench/soak-long.ts runs the same with the long mix (5% client aborts, 5% malformed bodies) on a full
 * disk for 600 s.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { timeParts } from '../gateway/daily-files.js';
import { packageRoot } from '../middleware/files.js';
import { startGateway } from '../gateway/app.js';

// ---------------------------------------------------------------------------------------------------
// Settings

/** The value of `--name N` or `--name=N` as a positive number, or `fallback`; exits 2 on a bad value. */
export function positive(argv: readonly string[], name: string, fallback: number): number {
  const raw = option(argv, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    process.stderr.write(`${name} needs a positive number, got "${raw}"\n`);
    process.exit(2);
  }
  return value;
}

function option(argv: readonly string[], name: string): string | undefined {
  const index = argv.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (index < 0) return undefined;
  const arg = argv[index] as string;
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[index + 1];
}

export const LOG_DISKS = ['ok', 'full', 'unwritable'] as const;
export type LogDisk = (typeof LOG_DISKS)[number];

/** The value of `--log-disk`, or `fallback`; exits 2 on a bad value. */
export function logDiskOption(argv: readonly string[], fallback: LogDisk): LogDisk {
  const raw = option(argv, '--log-disk') ?? fallback;
  if (!(LOG_DISKS as readonly string[]).includes(raw)) {
    process.stderr.write(`--log-disk needs one of ${LOG_DISKS.join(', ')}, got "${raw}"\n`);
    process.exit(2);
  }
  return raw as LogDisk;
}

const MAX_IN_FLIGHT = 256;
/**
 * RSS grows while code is compiled and pools fill, and the first full collections (around 10 s in) hand
 * memory back a few seconds late: flatness is judged after warm-up, on medians of 5 s windows (one
 * sample a second, a full GC every 5 s when --expose-gc), so one sample taken mid-collection decides nothing.
 */
const warmupOf = (durationS: number) => Math.min(60, Math.max(12, durationS * 0.2));
const RSS_TOLERANCE = 0.15;
const STREAM_EVENTS = 5;
const STREAM_GAP_MS = 20;

// ---------------------------------------------------------------------------------------------------
// The fake upstream: what it does is chosen by the client through the x-soak header, which the gateway
// forwards like any other header.

type Behaviour = 'reply' | 'error_500' | 'reset_before_headers' | 'reset_mid_stream';

function sse(index: number): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-soak', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: `piece ${index} ` }, finish_reason: null }] })}\n\n`;
}

async function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const behaviour = String(req.headers['x-soak'] ?? 'reply') as Behaviour;
      const stream = Buffer.concat(chunks).includes('"stream":true');
      if (behaviour === 'reset_before_headers') return req.socket.resetAndDestroy();
      if (behaviour === 'error_500') {
        res.writeHead(500, { 'content-type': 'application/json' });
        return res.end('{"error":{"message":"upstream failed","type":"server_error","param":null,"code":null}}');
      }
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ id: 'chatcmpl-soak', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }] }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer);
        if (behaviour === 'reset_mid_stream' && sent === 2) {
          clearInterval(timer);
          return req.socket.resetAndDestroy();
        }
        if (sent === STREAM_EVENTS) {
          clearInterval(timer);
          return res.end('data: [DONE]\n\n');
        }
        res.write(sse(sent));
        sent += 1;
      }, STREAM_GAP_MS);
      res.once('close', () => clearInterval(timer));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

// ---------------------------------------------------------------------------------------------------
// Traffic: each kind of request and the one outcome it must have.

type Outcome = 'complete' | 'cut' | 'aborted';

export interface Kind {
  readonly name: string;
  readonly weight: number;
  readonly path: string;
  readonly body: string | Uint8Array<ArrayBuffer>;
  /** Request headers besides content-type, e.g. a Content-Encoding. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly behaviour: Behaviour;
  readonly stream: boolean;
  /** Status, route and outcome expected; anything else is an unexpected error. null: no decision (refused before routing). */
  readonly status: number;
  readonly mode: 'ANSWER' | 'ACTION' | null;
  readonly outcome: Outcome;
  /** Abort the request once the first body bytes arrive. */
  readonly abort?: boolean;
}

const chat = (content: string, stream = false) => JSON.stringify({ model: 'soak', stream, messages: [{ role: 'system', content: 'client prompt' }, { role: 'user', content }] });
const anthropic = (content: string, stream = false) => JSON.stringify({ model: 'soak', max_tokens: 64, stream, messages: [{ role: 'user', content }] });
const responses = (content: string, stream = false) => JSON.stringify({ model: 'soak', stream, input: content });

/** The default mix: every kind of request and upstream failure, 10% client aborts. */
export const SOAK_MIX: readonly Kind[] = [
  { name: 'answer', weight: 25, path: '/v1/chat/completions', body: chat('what is a race condition?'), behaviour: 'reply', stream: false, status: 200, mode: 'ANSWER', outcome: 'complete' },
  { name: 'action', weight: 20, path: '/v1/messages', body: anthropic('fix the failing test in src/app.ts'), behaviour: 'reply', stream: false, status: 200, mode: 'ACTION', outcome: 'complete' },
  { name: 'action_responses', weight: 8, path: '/v1/responses', body: responses('deploy the api to prod, just do it'), behaviour: 'reply', stream: false, status: 200, mode: 'ACTION', outcome: 'complete' },
  { name: 'stream', weight: 17, path: '/v1/chat/completions', body: chat('search the codebase for auth handlers', true), behaviour: 'reply', stream: true, status: 200, mode: 'ACTION', outcome: 'complete' },
  { name: 'upstream_500', weight: 8, path: '/v1/chat/completions', body: chat('tell me a joke about compilers'), behaviour: 'error_500', stream: false, status: 500, mode: 'ANSWER', outcome: 'complete' },
  { name: 'upstream_reset_502', weight: 6, path: '/v1/messages', body: anthropic('run the tests'), behaviour: 'reset_before_headers', stream: false, status: 502, mode: 'ACTION', outcome: 'complete' },
  { name: 'upstream_cut_mid_stream', weight: 6, path: '/v1/chat/completions', body: chat('refactor src/db.ts', true), behaviour: 'reset_mid_stream', stream: true, status: 200, mode: 'ACTION', outcome: 'cut' },
  { name: 'client_abort', weight: 10, path: '/v1/chat/completions', body: chat('explain closures', true), behaviour: 'reply', stream: true, status: 200, mode: 'ANSWER', outcome: 'aborted', abort: true },
];

/**
 * The long soak's mix: answers, actions and streams in all three APIs, a few upstream failures, 5%
 * client aborts and 5% malformed bodies (JSON cut short, and a gzip body that is not gzip), which the
 * gateway refuses with a 400 before routing.
 */
export const LONG_MIX: readonly Kind[] = [
  { name: 'answer', weight: 22, path: '/v1/chat/completions', body: chat('what is a race condition?'), behaviour: 'reply', stream: false, status: 200, mode: 'ANSWER', outcome: 'complete' },
  { name: 'answer_anthropic', weight: 8, path: '/v1/messages', body: anthropic('how do I read a flame graph?'), behaviour: 'reply', stream: false, status: 200, mode: 'ANSWER', outcome: 'complete' },
  { name: 'action', weight: 18, path: '/v1/messages', body: anthropic('fix the failing test in src/app.ts'), behaviour: 'reply', stream: false, status: 200, mode: 'ACTION', outcome: 'complete' },
  { name: 'action_responses', weight: 10, path: '/v1/responses', body: responses('deploy the api to prod, just do it'), behaviour: 'reply', stream: false, status: 200, mode: 'ACTION', outcome: 'complete' },
  { name: 'stream', weight: 17, path: '/v1/chat/completions', body: chat('search the codebase for auth handlers', true), behaviour: 'reply', stream: true, status: 200, mode: 'ACTION', outcome: 'complete' },
  { name: 'upstream_500', weight: 5, path: '/v1/chat/completions', body: chat('tell me a joke about compilers'), behaviour: 'error_500', stream: false, status: 500, mode: 'ANSWER', outcome: 'complete' },
  { name: 'upstream_reset_502', weight: 5, path: '/v1/messages', body: anthropic('run the tests'), behaviour: 'reset_before_headers', stream: false, status: 502, mode: 'ACTION', outcome: 'complete' },
  { name: 'upstream_cut_mid_stream', weight: 5, path: '/v1/chat/completions', body: chat('refactor src/db.ts', true), behaviour: 'reset_mid_stream', stream: true, status: 200, mode: 'ACTION', outcome: 'cut' },
  { name: 'client_abort', weight: 5, path: '/v1/chat/completions', body: chat('explain closures', true), behaviour: 'reply', stream: true, status: 200, mode: 'ANSWER', outcome: 'aborted', abort: true },
  { name: 'malformed_json', weight: 3, path: '/v1/chat/completions', body: chat('fix the build').slice(0, 40), behaviour: 'reply', stream: false, status: 400, mode: null, outcome: 'complete' },
  { name: 'malformed_gzip', weight: 2, path: '/v1/messages', body: Uint8Array.from(Buffer.concat([gzipSync(anthropic('fix the build')).subarray(0, 20), Buffer.from('not the rest of it')])), headers: { 'content-encoding': 'gzip' }, behaviour: 'reply', stream: false, status: 400, mode: null, outcome: 'complete' },
];

/** Picks kinds in a fixed interleaved order, so every window of the run has the same mix. */
function* kindSequence(kinds: readonly Kind[]): Generator<Kind> {
  const totalWeight = kinds.reduce((sum, kind) => sum + kind.weight, 0);
  const credit = kinds.map(() => 0);
  for (;;) {
    kinds.forEach((kind, index) => {
      credit[index] = (credit[index] as number) + kind.weight / totalWeight;
    });
    const best = credit.indexOf(Math.max(...credit));
    credit[best] = (credit[best] as number) - 1;
    yield kinds[best] as Kind;
  }
}

// ---------------------------------------------------------------------------------------------------
// Measurement, in fixed memory: a soak that grew its own arrays would measure itself.

/** Latency histogram at 0.1 ms resolution up to 10 s. */
class Latency {
  readonly #buckets = new Uint32Array(100_000);
  #count = 0;
  #max = 0;
  add(ms: number): void {
    this.#buckets[Math.min(this.#buckets.length - 1, Math.floor(ms * 10))]! += 1;
    this.#count += 1;
    this.#max = Math.max(this.#max, ms);
  }
  quantile(q: number): number {
    const target = Math.ceil(this.#count * q);
    let seen = 0;
    for (let index = 0; index < this.#buckets.length; index += 1) {
      seen += this.#buckets[index]!;
      if (seen >= target && seen > 0) return (index + 1) / 10;
    }
    return 0;
  }
  get count(): number {
    return this.#count;
  }
  get max(): number {
    return this.#max;
  }
}

const MiB = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const gc = (globalThis as { gc?: () => void }).gc;

/**
 * Event-loop delay (libuv timer lateness) of this process, which runs the gateway. A forced GC is the
 * soak's own doing, so the monitor is paused across it: the lag read is the traffic's.
 */
const lag = monitorEventLoopDelay({ resolution: 10 });

function rssNow(): number {
  if (gc) {
    lag.disable();
    gc();
    lag.enable();
  }
  return process.memoryUsage().rss;
}

const WINDOW_S = 5;

/** Median of the one-second samples [from, from + WINDOW_S) that were taken. */
function windowMedian(samples: Float64Array, from: number): number {
  const window = [...samples.subarray(Math.max(0, from), Math.max(0, from) + WINDOW_S)].filter((value) => value > 0).sort((a, b) => a - b);
  return window.length === 0 ? Number.NaN : (window[Math.floor(window.length / 2)] as number);
}

/** Largest of the one-second samples [from, from + WINDOW_S). */
function windowMax(samples: Float64Array, from: number): number {
  return Math.max(0, ...samples.subarray(Math.max(0, from), Math.max(0, from) + WINDOW_S));
}

async function send(base: string, kind: Kind): Promise<{ ok: boolean; why?: string }> {
  const controller = new AbortController();
  const response = await fetch(`${base}${kind.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-soak': kind.behaviour, authorization: 'Bearer sk-soak-test-key-0123456789', ...kind.headers },
    body: kind.body,
    signal: controller.signal,
  });
  if (response.status !== kind.status) return { ok: false, why: `status ${response.status}, expected ${kind.status}` };
  const mode = response.headers.get('x-task-router-mode');
  if (mode !== kind.mode) return { ok: false, why: `mode ${mode}, expected ${kind.mode}` };
  let outcome: Outcome = 'complete';
  let text = '';
  try {
    const reader = response.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
      if (kind.abort) {
        controller.abort();
        outcome = 'aborted';
        break;
      }
    }
  } catch (error) {
    outcome = (error as Error).name === 'AbortError' ? 'aborted' : 'cut';
  }
  if (outcome !== kind.outcome) return { ok: false, why: `${outcome}, expected ${kind.outcome}` };
  if (outcome === 'complete' && kind.stream && !text.includes('[DONE]')) return { ok: false, why: 'stream ended without [DONE]' };
  return { ok: true };
}

/** The gateway's upstream-error counters by kind, and the log lines it dropped because writes failed. */
async function gatewayCounters(url: string): Promise<{ upstream: Record<string, number>; writeFailed: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const upstream: Record<string, number> = {};
  for (const [, kind, value] of text.matchAll(/^task_router_upstream_errors_total\{kind="([a-z_]+)"\} (\S+)$/gm)) upstream[kind as string] = Number(value);
  let writeFailed = 0;
  for (const [, value] of text.matchAll(/^task_router_log_dropped_total\{[^}]*reason="write_failed"[^}]*\} (\S+)$/gm)) writeFailed += Number(value);
  return { upstream, writeFailed };
}

/**
 * The log folder for a disk in the given state. full: every day file the run can write (today and
 * tomorrow, for a run across midnight) is a link to /dev/full, so each append fails with ENOSPC.
 * unwritable: the folder lies under a regular file, so it can never be made (root included).
 */
async function logDirFor(disk: LogDisk, dir: string): Promise<string> {
  if (disk === 'ok') return join(dir, 'logs');
  if (disk === 'unwritable') {
    const blocker = join(dir, 'not-a-folder');
    await writeFile(blocker, 'a file where the log folder would go\n');
    return join(blocker, 'logs');
  }
  const logs = join(dir, 'logs');
  const now = Date.now();
  for (const [name, extension] of [['decisions', 'jsonl'], ['memory', 'md']] as const) {
    await mkdir(join(logs, name), { recursive: true });
    for (const at of [now, now + 86_400_000]) await symlink('/dev/full', join(logs, name, `${timeParts(new Date(at), 0).day}.${extension}`));
  }
  return logs;
}

export interface SoakOptions {
  readonly durationS: number;
  readonly rate: number;
  readonly kinds: readonly Kind[];
  readonly logDisk: LogDisk;
}

// ---------------------------------------------------------------------------------------------------

/** Runs one soak and prints its report; resolves true on PASS. */
export async function runSoak(options: SoakOptions): Promise<boolean> {
  const { durationS, rate } = options;
  const warmupS = warmupOf(durationS);
  const root = packageRoot();
  const dir = await mkdtemp(join(tmpdir(), 'task-router-soak-'));
  const upstream = await startUpstream();
  const configFile = join(dir, 'soak.yaml');
  await writeFile(configFile, stringify({
    server: { host: '127.0.0.1', port: 0 },
    upstream: { url: upstream.url, timeoutMs: 5_000, idleTimeoutMs: 5_000, maxSockets: 64 },
    rules: join(root, 'config', 'rules.json'),
    prompts: join(root, 'prompts'),
    reload: { watch: false },
    logging: { dir: await logDirFor(options.logDisk, dir), decisions: true, memory: true, utcOffset: '+00:00' },
  }));
  const gateway = await startGateway({ configFile });

  process.stdout.write(`soak: ${durationS} s at ${rate} req/s (warm-up ${warmupS} s, at most ${MAX_IN_FLIGHT} in flight, ${options.kinds.length} kinds of request, log disk ${options.logDisk}), gateway and fake upstream on 127.0.0.1${gc ? '' : ' (no --expose-gc: RSS read without forcing GC)'}\n`);
  const startRss = rssNow();
  const samples = new Float64Array(Math.ceil(durationS) + 1);
  const heap = new Float64Array(Math.ceil(durationS) + 1);
  const lagP99 = new Float64Array(Math.ceil(durationS) + 1);
  const lagMax = new Float64Array(Math.ceil(durationS) + 1);
  const expected = new Map<string, number>(options.kinds.map((kind) => [kind.name, 0]));
  const unexpected = new Map<string, number>();
  const latency = new Latency();
  let started = 0;
  let finished = 0;
  let inFlight = 0;
  let skipped = 0;
  const kinds = kindSequence(options.kinds);
  lag.enable();
  lag.reset();

  const begin = performance.now();
  const end = begin + durationS * 1000;
  let credit = 0;
  let last = begin;
  let nextSample = begin + 1000;
  let warmTaken = false;

  while (performance.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    const now = performance.now();
    credit += ((now - last) / 1000) * rate;
    last = now;
    for (; credit >= 1; credit -= 1) {
      if (inFlight >= MAX_IN_FLIGHT) {
        skipped += 1;
        continue;
      }
      const kind = kinds.next().value as Kind;
      inFlight += 1;
      started += 1;
      const sentAt = performance.now();
      send(gateway.url, kind)
        .then((result) => {
          if (result.ok) {
            expected.set(kind.name, (expected.get(kind.name) ?? 0) + 1);
            if (!kind.stream && kind.status === 200 && warmTaken) latency.add(performance.now() - sentAt);
          } else {
            const key = `${kind.name}: ${result.why}`;
            unexpected.set(key, (unexpected.get(key) ?? 0) + 1);
          }
        }, (error: unknown) => {
          const key = `${kind.name}: ${(error as Error).message}`;
          unexpected.set(key, (unexpected.get(key) ?? 0) + 1);
        })
        .finally(() => {
          inFlight -= 1;
          finished += 1;
        });
    }
    if (now >= nextSample) {
      nextSample += 1000;
      const elapsed = (now - begin) / 1000;
      const second = Math.min(samples.length - 1, Math.round(elapsed));
      // The lag of the second that just ended, read before this second's forced GC.
      lagP99[second] = lag.count > 0 ? lag.percentile(99) / 1e6 : 0;
      lagMax[second] = lag.count > 0 ? lag.max / 1e6 : 0;
      lag.reset();
      samples[second] = second % WINDOW_S === 0 ? rssNow() : process.memoryUsage().rss;
      heap[second] = process.memoryUsage().heapUsed;
      if (process.env.SOAK_TRACE) process.stderr.write(`${second}s rss ${MiB(samples[second] as number)} heap ${MiB(heap[second] as number)} lag p99 ${(lagP99[second] as number).toFixed(1)} ms max ${(lagMax[second] as number).toFixed(1)} ms, ${inFlight} in flight\n`);
      warmTaken ||= elapsed >= warmupS;
    }
  }
  lag.disable();
  const drainUntil = performance.now() + 10_000;
  while (inFlight > 0 && performance.now() < drainUntil) await new Promise((resolve) => setTimeout(resolve, 20));
  const seconds = (performance.now() - begin) / 1000;
  const { upstream: counters, writeFailed } = await gatewayCounters(gateway.url);
  await gateway.flushLogs();
  await gateway.close();
  await upstream.close();
  await rm(dir, { recursive: true, force: true });

  // The gateway's own counters must agree with what was sent: every reset counted once, under its
  // kind, and client aborts not counted as upstream errors at all.
  const wantCounters: Record<string, number> = {
    upstream_unreachable: expected.get('upstream_reset_502') ?? 0,
    upstream_aborted: expected.get('upstream_cut_mid_stream') ?? 0,
  };
  const countersAgree = Object.entries(wantCounters).every(([kind, count]) => (counters[kind] ?? 0) === count)
    && Object.entries(counters).every(([kind, count]) => count === (wantCounters[kind] ?? 0));
  const unexpectedTotal = [...unexpected.values()].reduce((sum, count) => sum + count, 0);
  // Medians of the window right after warm-up, the one in the middle of the rest and the last one.
  const lastWindow = Math.floor(durationS) - WINDOW_S;
  const windows = { warm: Math.ceil(warmupS), middle: Math.floor((Math.ceil(warmupS) + lastWindow) / 2), end: lastWindow };
  const rss = {
    warm: windowMedian(samples, windows.warm),
    middle: windowMedian(samples, windows.middle),
    end: windowMedian(samples, windows.end),
    peak: Math.max(...samples),
  };
  const change = (value: number) => (value - rss.warm) / rss.warm;
  const flat = [change(rss.middle), change(rss.end)].every((value) => Number.isFinite(value) && Math.abs(value) <= RSS_TOLERANCE);
  const percent = (value: number) => `${value >= 0 ? '+' : ''}${(value * 100).toFixed(1)}%`;
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  const at = (name: keyof typeof windows) => {
    const from = windows[name];
    return `${name === 'warm' ? 'after warm-up' : name} (${from}-${from + WINDOW_S} s): rss ${MiB(windowMedian(samples, from))}, heap ${MiB(windowMedian(heap, from))}, event-loop lag p99 ${ms(windowMedian(lagP99, from))}, max ${ms(windowMax(lagMax, from))}`;
  };
  // A broken log disk must show in the counters (every line dropped, none silently lost) and cost no request.
  const diskNoticed = options.logDisk === 'ok' || writeFailed > 0;
  const pass = unexpectedTotal === 0 && inFlight === 0 && countersAgree && flat && diskNoticed;

  const lines = [
    `requests: ${started} started, ${finished} finished, ${inFlight} still in flight, ${skipped} not sent (in-flight cap) in ${seconds.toFixed(1)} s: ${(finished / seconds).toFixed(1)} req/s`,
    `expected outcomes: ${[...expected].map(([name, count]) => `${name} ${count}`).join(', ')}`,
    `unexpected errors: ${unexpectedTotal}${[...unexpected].map(([why, count]) => `\n  ${count} × ${why}`).join('')}`,
    `latency after warm-up (non-streamed 200s, ${latency.count}): p50 ${latency.quantile(0.5).toFixed(1)} ms, p99 ${latency.quantile(0.99).toFixed(1)} ms, max ${latency.max.toFixed(1)} ms`,
    `rss (medians of ${WINDOW_S} s windows): start ${MiB(startRss)}, after warm-up ${MiB(rss.warm)}, middle ${MiB(rss.middle)} (${percent(change(rss.middle))}), end ${MiB(rss.end)} (${percent(change(rss.end))}), peak ${MiB(rss.peak)}; limit ±${RSS_TOLERANCE * 100}% of after warm-up`,
    ...(['warm', 'middle', 'end'] as const).map(at),
    `rss flat within ±${RSS_TOLERANCE * 100}% after warm-up: ${flat ? 'PASS' : 'MISS'}`,
    `gateway upstream errors: ${JSON.stringify(counters)}; expected ${JSON.stringify(wantCounters)}: ${countersAgree ? 'agree' : 'DISAGREE'}`,
    `log disk ${options.logDisk}: ${writeFailed} log lines dropped on failed writes${diskNoticed ? '' : ' (EXPECTED SOME)'}`,
    pass ? 'PASS' : `FAIL:${unexpectedTotal ? ' unexpected errors;' : ''}${inFlight ? ' requests never finished;' : ''}${countersAgree ? '' : ' counters disagree;'}${flat ? '' : ' RSS not flat;'}${diskNoticed ? '' : ' the broken log disk went unnoticed;'}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return pass;
}

/** Runs a soak from the command line; exit status 0 on PASS, 1 on FAIL or when it could not run. */
export function soakMain(defaults: { durationS: number; kinds: readonly Kind[]; logDisk: LogDisk }): void {
  const argv = process.argv.slice(2);
  runSoak({
    durationS: positive(argv, '--duration', defaults.durationS),
    rate: positive(argv, '--rate', 100),
    kinds: defaults.kinds,
    logDisk: logDiskOption(argv, defaults.logDisk),
  }).then((pass) => {
    process.exitCode = pass ? 0 : 1;
  }, (error: unknown) => {
    process.stderr.write(`soak failed to run: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) soakMain({ durationS: 300, kinds: SOAK_MIX, logDisk: 'ok' });
