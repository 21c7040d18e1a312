/**
 * Gateway overhead benchmark: the full task-router gateway against a bare Express + http-proxy-middleware
 * proxy, both in front of the same fake upstream (bench/upstream.ts). Prints figures and a PASS/MISS
 * "targets" section; asserts nothing; bounded; stops by itself. All traffic stays on 127.0.0.1.
 *
 *   node dist/bench/gateway.js [--duration N] [--quick] [--connections N] [--cpu-prof] [--cpu-prof-dir DIR]
 *
 *   --duration N     seconds of load per timed run (default 10)
 *   --quick          2 s runs, 1 s warm-ups, 50 streamed requests per setup: a smoke run
 *   --connections N  autocannon connections (default 50)
 *   --cpu-prof       CPU-profile the gateway process during its last timed run; the .cpuprofile path is
 *                    printed (the B figures of that run carry the profiler's overhead)
 *
 * Layout: the load generator (autocannon, fetch) runs in this process; the upstream, the bare proxy (A)
 * and the gateway (B) each run in their own forked process, so the server under test has an event loop
 * of its own and its per-request cost is not diluted by the load generator's or the upstream's.
 * The runs are interleaved A, B, A, B; each setup's figure is the median of its runs.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import type { Request as ExpressRequest, Response as ExpressResponse } from 'express';
import { CHAT_PATH, SSE_CHUNKS, SSE_GAP_MS } from './upstream.js';

// ---------------------------------------------------------------------------------------------------
// Settings

const argv = process.argv.slice(2);

function option(name: string): string | undefined {
  const index = argv.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (index < 0) return undefined;
  const arg = argv[index]!;
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[index + 1];
}

function positive(name: string, fallback: number): number {
  const raw = option(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    process.stderr.write(`${name} needs a positive number, got "${raw}"\n`);
    process.exit(2);
  }
  return value;
}

const QUICK = argv.includes('--quick');
const DURATION_S = positive('--duration', QUICK ? 2 : 10);
const WARMUP_S = QUICK ? 1 : 2;
const CONNECTIONS = Math.round(positive('--connections', 50));
const ROUNDS = 2;
const SSE_REQUESTS = QUICK ? 50 : 200;
const SSE_WARMUP = QUICK ? 10 : 20;
const PROFILE = argv.includes('--cpu-prof');
const PROFILE_DIR = option('--cpu-prof-dir') ?? os.tmpdir();
const HOST = '127.0.0.1';
/** Bounds on anything that could otherwise wait forever: an IPC answer, one fetch, a child's exit. */
const IPC_TIMEOUT_MS = 15_000;
const FETCH_TIMEOUT_MS = 15_000;
const EXIT_TIMEOUT_MS = 5_000;

const TARGET_THROUGHPUT_RATIO = 0.85;
const TARGET_P99_DELTA_MS = 1;
const TARGET_TTFB_RATIO = 1.05;
/** Above this much CPU used by other processes during a measurement, the run is flagged as noisy. */
const NOISY_OTHER_CPU = 25;

// ---------------------------------------------------------------------------------------------------
// Request bodies: a client system prompt, then user / assistant / user; the last user turn alternates
// between a question (ANSWER) and a request to act (ACTION).

const CLIENT_SYSTEM_PROMPT = [
  'You are Atlas, the engineering assistant of the payments platform team at a mid-sized company.',
  'You help engineers understand, debug and change a TypeScript monorepo (services/, packages/, infra/).',
  'Be precise and brief. Prefer concrete file paths, commands and code over general advice.',
  'When you are not sure about something in the codebase, say so and say how to check it.',
  'Never invent APIs, configuration keys or command-line flags. Quote error messages exactly.',
  'Follow the repository conventions: strict TypeScript, ESM modules, vitest for tests, zod for validation,',
  'pino for logs, and conventional commits. Database access goes through the repository layer only.',
  'Production changes need a linked ticket and a reviewer; mention it when a suggestion touches production.',
  'Format answers in Markdown with short sections; use fenced code blocks with a language tag for code.',
].join('\n');

const HISTORY = [
  {
    role: 'user',
    content: 'I am working on the billing export service. The nightly export job has been flaky since we moved it to the new queue worker: about one run in five now times out after 30 minutes, while it normally finishes in about 4 minutes.',
  },
  {
    role: 'assistant',
    content: 'A job that usually takes 4 minutes but sometimes hits a 30 minute timeout is most often waiting rather than working: a lock held by another run, a connection pool that is exhausted, or a retry loop with a long backoff. The worker logs around the start of a slow run and the queue metrics for that night would tell these apart. Do you have the logs of the last slow run?',
  },
];

const ANSWER_TURN = 'Why would the new queue worker cause more lock waits than the old cron job did, and how can I tell a lock wait apart from an exhausted connection pool?';
const ACTION_TURN = 'Yes. Run the export job locally against the staging queue, grep the worker logs for lock timeouts, and fix the retry backoff in services/billing/src/jobs/export.ts so it gives up after three attempts.';

function chatBody(lastTurn: string, stream: boolean): string {
  return JSON.stringify({
    model: 'gpt-4o-mini',
    temperature: 0.2,
    max_tokens: 512,
    ...(stream ? { stream: true } : {}),
    messages: [{ role: 'system', content: CLIENT_SYSTEM_PROMPT }, ...HISTORY, { role: 'user', content: lastTurn }],
  });
}

const BODIES = {
  answer: chatBody(ANSWER_TURN, false),
  action: chatBody(ACTION_TURN, false),
  answerStream: chatBody(ANSWER_TURN, true),
  actionStream: chatBody(ACTION_TURN, true),
};

// ---------------------------------------------------------------------------------------------------
// Child side: one server under test (A bare proxy, B gateway) in its own process.

type Kind = 'bare' | 'gateway';

interface CpuUsage { readonly user: number; readonly system: number }
type Message =
  | { type: 'ready'; url: string; info?: string }
  | { type: 'cpu'; usage: CpuUsage }
  | { type: 'profile-start' }
  | { type: 'profile-stop'; file?: string }
  /** Median µs per classification: of the requests served since the last ask; of the two turns back to back. */
  | { type: 'classify-times'; served?: number; requests?: number; backToBack?: number }
  | { type: 'close' };

/** Most classification times a gateway child keeps between two asks. */
const MAX_CLASSIFY_TIMES = 100_000;

async function serve(kind: Kind, upstreamUrl: string): Promise<void> {
  const express = (await import('express')).default;
  const { createProxyMiddleware, fixRequestBody } = await import('http-proxy-middleware');
  const { loadConfig } = await import('../gateway/config.js');
  const { buildSnapshot, createGatewayApp } = await import('../gateway/app.js');

  const loaded = await loadConfig(); // the shipped config/default.yaml, no environment overlay
  const { config } = loaded;
  let app: http.RequestListener;
  let closeProxy: () => void;
  let info: string;
  let classifyTimes = (): Message => ({ type: 'classify-times' });

  if (kind === 'bare') {
    // The same agent settings as middleware/proxy.ts; default plugins ejected as the gateway does (the
    // default logger plugin builds a URL per response even with no logger), with an error answer instead.
    const agent = new http.Agent({ keepAlive: true, maxSockets: config.upstream.maxSockets, maxFreeSockets: Math.min(config.upstream.maxSockets, 64) });
    const bare = express();
    bare.disable('x-powered-by');
    bare.use(express.json({ limit: config.limits.bodyBytes }));
    bare.use(createProxyMiddleware<ExpressRequest, ExpressResponse>({
      target: upstreamUrl,
      changeOrigin: true,
      agent,
      xfwd: false,
      ejectPlugins: true,
      plugins: [(proxyServer) => {
        proxyServer.on('proxyReq', fixRequestBody);
        proxyServer.on('error', (_error, _req, res) => {
          if (!('writeHead' in res)) return;
          if (res.headersSent) {
            res.destroy();
            return;
          }
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end('{"error":{"message":"upstream error","type":"api_error","param":null,"code":"upstream_unreachable"}}');
        });
      }],
    }));
    app = bare;
    closeProxy = () => agent.destroy();
    info = `express.json + createProxyMiddleware + fixRequestBody, keepAlive maxSockets ${config.upstream.maxSockets}`;
  } else {
    const snapshot = await buildSnapshot(loaded);
    const served: number[] = [];
    const gateway = createGatewayApp({
      hooks: { decision: (decision) => { if (decision.micros !== undefined && served.length < MAX_CLASSIFY_TIMES) served.push(decision.micros); } },
      snapshot: () => snapshot,
      upstream: { url: upstreamUrl, timeoutMs: config.upstream.timeoutMs, maxSockets: config.upstream.maxSockets },
      bodyBytes: config.limits.bodyBytes,
    });
    app = gateway.app;
    closeProxy = gateway.close;
    classifyTimes = () => {
      const requests = served.length;
      const inGateway = requests > 0 ? median(served) : Number.NaN;
      served.length = 0;
      const times: number[] = [];
      for (let i = 0; i < 2000; i += 1) {
        const started = performance.now();
        snapshot.classifier.classify(i % 2 === 0 ? ACTION_TURN : ANSWER_TURN);
        times.push((performance.now() - started) * 1000);
      }
      return { type: 'classify-times', served: inGateway, requests, backToBack: median(times.slice(500)) };
    };
    info = `createGatewayApp, ${loaded.file.split('/').slice(-2).join('/')}: ${snapshot.classifier.ruleIds.length} rules, ${snapshot.classifier.engine}, hard=${snapshot.hardRouting}, strategy=${snapshot.strategy}`;
  }

  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, HOST, () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  let session: import('node:inspector/promises').Session | null = null;
  process.on('message', (message: Message) => {
    void (async () => {
      switch (message.type) {
        case 'cpu':
          process.send?.({ type: 'cpu', usage: process.cpuUsage() } satisfies Message);
          return;
        case 'classify-times':
          process.send?.(classifyTimes());
          return;
        case 'profile-start': {
          const { Session } = await import('node:inspector/promises');
          session = new Session();
          session.connect();
          await session.post('Profiler.enable');
          await session.post('Profiler.setSamplingInterval', { interval: 500 });
          await session.post('Profiler.start');
          process.send?.({ type: 'profile-start' } satisfies Message);
          return;
        }
        case 'profile-stop': {
          let file: string | undefined;
          if (session) {
            const { profile } = await session.post('Profiler.stop');
            file = join(PROFILE_DIR, `gateway-${kind}-${process.pid}.cpuprofile`);
            await mkdir(PROFILE_DIR, { recursive: true });
            await writeFile(file, JSON.stringify(profile));
            session.disconnect();
            session = null;
          }
          process.send?.({ type: 'profile-stop', ...(file ? { file } : {}) } satisfies Message);
          return;
        }
        case 'close':
          server.closeAllConnections();
          server.close(() => {
            closeProxy();
            process.disconnect();
          });
          return;
        default:
      }
    })();
  });
  process.send?.({ type: 'ready', url: `http://${HOST}:${port}`, info } satisfies Message);
}

// ---------------------------------------------------------------------------------------------------
// Parent side: children over IPC.

class Child {
  private readonly waiting = new Map<string, (message: Message) => void>();

  private constructor(readonly name: string, private readonly proc: ChildProcess, readonly url: string, readonly info: string) {
    proc.on('message', (message: Message) => {
      const resolve = this.waiting.get(message.type);
      this.waiting.delete(message.type);
      resolve?.(message);
    });
  }

  static start(name: string, file: string, args: readonly string[]): Promise<Child> {
    const proc = fork(file, args, { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    return new Promise((resolve, reject) => {
      const failed = (code: number | null) => reject(new Error(`${name} exited (code ${code}) before it was ready`));
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`${name} was not ready within ${IPC_TIMEOUT_MS} ms`));
      }, IPC_TIMEOUT_MS);
      proc.once('exit', failed);
      proc.once('error', reject);
      proc.once('message', (message: Message) => {
        clearTimeout(timer);
        proc.off('exit', failed);
        if (message.type !== 'ready') return reject(new Error(`${name}: unexpected first message ${message.type}`));
        resolve(new Child(name, proc, message.url, message.info ?? ''));
      });
    });
  }

  ask(type: Message['type']): Promise<Message> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(type);
        reject(new Error(`${this.name} did not answer "${type}" within ${IPC_TIMEOUT_MS} ms`));
      }, IPC_TIMEOUT_MS);
      this.waiting.set(type, (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      this.proc.send({ type });
    });
  }

  async cpu(): Promise<CpuUsage> {
    const message = await this.ask('cpu');
    return message.type === 'cpu' ? message.usage : { user: 0, system: 0 };
  }

  /** Asks the child to close its server and agent and exit; kills it if it has not within EXIT_TIMEOUT_MS. */
  close(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        process.stderr.write(`${this.name} did not exit within ${EXIT_TIMEOUT_MS} ms of "close"; killing it\n`);
        this.proc.kill('SIGKILL');
      }, EXIT_TIMEOUT_MS);
      this.proc.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      if (this.proc.connected) this.proc.send({ type: 'close' });
      else this.proc.kill('SIGTERM');
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Statistics and formatting

function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

function median(values: readonly number[]): number {
  const sorted = Float64Array.from(values).sort();
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const signed = (value: number, digits: number) => (Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${value.toFixed(digits)}` : 'n/a');

function table(rows: readonly (readonly string[])[], rightAligned: ReadonlySet<number>): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) => row.map((cell, column) => (rightAligned.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ').trimEnd())
    .join('\n');
}

const perRequest = (run: LoadRun) => run.serverCpuPerRequestUs;

const cpuPercent = (before: CpuUsage, after: CpuUsage, wallMs: number) =>
  ((after.user - before.user + after.system - before.system) / 1000 / wallMs) * 100;

// ---------------------------------------------------------------------------------------------------
// Load runs

interface LoadRun {
  readonly setup: 'A' | 'B';
  readonly round: number;
  readonly reqPerSec: number;
  readonly p50: number;
  readonly p99: number;
  readonly requests: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly serverCpu: number;
  /** CPU time the server process spent per completed request, in µs: less sensitive to a busy machine than req/s. */
  readonly serverCpuPerRequestUs: number;
  readonly upstreamCpu: number;
  readonly loadgenCpu: number;
  /** CPU the rest of the machine used meanwhile (other processes, kernel), from os.cpus(). */
  readonly otherCpu: number;
}

/** Busy CPU time of the whole machine so far, in ms (all cores). */
function machineBusyMs(): number {
  return os.cpus().reduce((sum, cpu) => sum + cpu.times.user + cpu.times.nice + cpu.times.sys + cpu.times.irq, 0);
}

function cannon(url: string, seconds: number, onLatency?: (ms: number) => void): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json' };
    const instance = autocannon(
      {
        url,
        connections: CONNECTIONS,
        duration: seconds,
        timeout: 10,
        requests: [
          { method: 'POST', path: CHAT_PATH, headers, body: BODIES.answer },
          { method: 'POST', path: CHAT_PATH, headers, body: BODIES.action },
        ],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    if (onLatency) instance.on('response', (_client, _status, _bytes, responseTime) => onLatency(responseTime));
  });
}

async function loadRun(setup: 'A' | 'B', round: number, server: Child, upstream: Child, profile: boolean): Promise<LoadRun & { profileFile?: string }> {
  await cannon(server.url, WARMUP_S);
  if (profile) await server.ask('profile-start');
  const latencies: number[] = [];
  const [serverBefore, upstreamBefore] = await Promise.all([server.cpu(), upstream.cpu()]);
  const loadgenBefore = process.cpuUsage();
  const machineBefore = machineBusyMs();
  const started = performance.now();
  const result = await cannon(server.url, DURATION_S, (ms) => latencies.push(ms));
  const wallMs = performance.now() - started;
  const loadgenAfter = process.cpuUsage();
  const machineAfter = machineBusyMs();
  const [serverAfter, upstreamAfter] = await Promise.all([server.cpu(), upstream.cpu()]);
  let profileFile: string | undefined;
  if (profile) {
    const stopped = await server.ask('profile-stop');
    if (stopped.type === 'profile-stop') profileFile = stopped.file;
  }
  const sorted = Float64Array.from(latencies).sort();
  const serverCpu = cpuPercent(serverBefore, serverAfter, wallMs);
  const upstreamCpu = cpuPercent(upstreamBefore, upstreamAfter, wallMs);
  const loadgenCpu = cpuPercent(loadgenBefore, loadgenAfter, wallMs);
  const machineCpu = ((machineAfter - machineBefore) / wallMs) * 100;
  return {
    setup,
    round,
    reqPerSec: result.requests.mean,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    requests: result.requests.total,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    serverCpu,
    serverCpuPerRequestUs: (serverAfter.user - serverBefore.user + serverAfter.system - serverBefore.system) / Math.max(1, result.requests.total),
    upstreamCpu,
    loadgenCpu,
    otherCpu: Math.max(0, machineCpu - serverCpu - upstreamCpu - loadgenCpu),
    ...(profileFile ? { profileFile } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Time to first SSE chunk

interface StreamResult { readonly ttfbMs: number; readonly ok: boolean }

async function streamOnce(url: string, body: string): Promise<StreamResult> {
  const started = performance.now();
  const response = await fetch(`${url}${CHAT_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  const reader = response.body!.getReader();
  const first = await reader.read();
  const ttfbMs = performance.now() - started;
  const decoder = new TextDecoder();
  let text = first.value ? decoder.decode(first.value, { stream: true }) : '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  const events = text.split('\n\n').filter((event) => event.startsWith('data: ')).length;
  return { ttfbMs, ok: response.status === 200 && !first.done && events === SSE_CHUNKS + 1 };
}

async function streamRuns(a: Child, b: Child): Promise<{ a: number[]; b: number[]; failures: { a: number; b: number } }> {
  const out = { a: [] as number[], b: [] as number[], failures: { a: 0, b: 0 } };
  for (let index = 0; index < SSE_WARMUP + SSE_REQUESTS; index += 1) {
    const body = index % 2 === 0 ? BODIES.answerStream : BODIES.actionStream;
    // Pairs alternate their order (A B, B A, …) so neither setup always goes first.
    const order: ['a' | 'b', Child][] = index % 2 === 0 ? [['a', a], ['b', b]] : [['b', b], ['a', a]];
    for (const [key, child] of order) {
      const result = await streamOnce(child.url, body).catch((): StreamResult => ({ ttfbMs: Number.NaN, ok: false }));
      if (index < SSE_WARMUP) continue;
      if (!result.ok) out.failures[key] += 1;
      if (Number.isNaN(result.ttfbMs)) continue;
      out[key].push(result.ttfbMs);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Routing check

async function routingCheck(a: Child, b: Child): Promise<string[]> {
  const lines: string[] = [];
  for (const [label, child] of [['A bare   ', a], ['B gateway', b]] as const) {
    for (const [turn, body] of [['ANSWER turn', BODIES.answer], ['ACTION turn', BODIES.action]] as const) {
      const response = await fetch(`${child.url}${CHAT_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      const json = (await response.json()) as { choices?: { message?: { content?: string } }[] };
      const mode = response.headers.get('x-task-router-mode');
      const route = response.headers.get('x-task-router-route');
      const confidence = response.headers.get('x-task-router-confidence');
      const decision = mode ? `x-task-router-mode=${mode} route=${route} confidence=${confidence}` : 'no x-task-router-mode';
      lines.push(`  ${label}  ${turn}: ${response.status}, ${decision}; upstream saw ${json.choices?.[0]?.message?.content ?? '?'}`);
    }
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const self = fileURLToPath(import.meta.url);
  const upstream = await Child.start('upstream', fileURLToPath(new URL('./upstream.js', import.meta.url)), []);
  const children: Child[] = [upstream];
  try {
    const a = await Child.start('A bare proxy', self, ['--serve', 'bare', '--upstream', upstream.url, '--cpu-prof-dir', PROFILE_DIR]);
    children.push(a);
    const b = await Child.start('B gateway', self, ['--serve', 'gateway', '--upstream', upstream.url, '--cpu-prof-dir', PROFILE_DIR]);
    children.push(b);

    const cpus = os.cpus();
    console.log('task-router gateway benchmark');
    console.log(`node ${process.version}, ${os.availableParallelism()} CPUs (${cpus[0]?.model.trim() ?? 'unknown'}), ${os.platform()} ${os.arch()}`);
    console.log(`duration ${DURATION_S} s per timed run (warm-up ${WARMUP_S} s before each), ${CONNECTIONS} connections, ${ROUNDS} rounds interleaved A B A B${QUICK ? ', --quick' : ''}`);
    console.log(`processes: load generator (autocannon, fetch) here; upstream ${upstream.url}, A ${a.url}, B ${b.url} each in its own process`);
    console.log(`  A bare proxy: ${a.info}`);
    console.log(`  B gateway:    ${b.info}`);
    console.log(`body: system prompt + user/assistant/user, ${BODIES.answer.length} / ${BODIES.action.length} bytes (ANSWER / ACTION last turn, alternating)`);
    console.log(`upstream: JSON completion at once; stream: ${SSE_CHUNKS} SSE chunks ${SSE_GAP_MS} ms apart (first at once)`);
    console.log('');
    console.log('routing check (before timing):');
    for (const line of await routingCheck(a, b)) console.log(line);
    console.log('');

    console.log('load runs (latency percentiles from per-response timings, sub-ms):');
    const runs: LoadRun[] = [];
    let profileFile: string | undefined;
    const header = ['run', 'setup', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'errors', 'timeouts', 'non-2xx', 'srv cpu%', 'srv µs/req', 'upstr cpu%', 'loadgen cpu%', 'other cpu%'];
    const widths = header.map((name, column) => Math.max(name.length, column === 1 ? 9 : 7));
    const line = (cells: readonly string[]) =>
      `  ${cells.map((cell, column) => (column === 1 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')}`;
    console.log(line(header));
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const [setup, child] of [['A', a], ['B', b]] as const) {
        const profile = PROFILE && setup === 'B' && round === ROUNDS;
        const run = await loadRun(setup, round, child, upstream, profile);
        if (run.profileFile) profileFile = run.profileFile;
        runs.push(run);
        console.log(line([
          String(run.round), run.setup === 'A' ? 'A bare' : 'B gateway', fixed(run.reqPerSec, 0), fixed(run.p50, 2), fixed(run.p99, 2),
          String(run.requests), String(run.errors), String(run.timeouts), String(run.non2xx), fixed(run.serverCpu, 0), fixed(perRequest(run), 0), fixed(run.upstreamCpu, 0), fixed(run.loadgenCpu, 0), fixed(run.otherCpu, 0),
        ]));
      }
    }
    console.log(`  (cpu%: one core = 100, machine = ${os.availableParallelism() * 100}; srv over 100 = its GC/libuv threads too; other = the rest of the machine meanwhile, noise if high)`);
    if (profileFile) console.log(`  cpu profile of B (round ${ROUNDS}, its figures include the profiler's overhead): ${profileFile}`);
    console.log('');

    console.log(`time to first SSE chunk: ${SSE_REQUESTS} sequential streamed requests per setup after ${SSE_WARMUP} warm-up each, A/B interleaved (plain fetch)`);
    const ours = async () => (await Promise.all([a.cpu(), b.cpu(), upstream.cpu()])).reduce((sum, usage) => sum + usage.user + usage.system, 0) / 1000
      + (process.cpuUsage().user + process.cpuUsage().system) / 1000;
    const [oursBefore, machineBefore, streamStarted] = [await ours(), machineBusyMs(), performance.now()];
    await b.ask('classify-times'); // drops the load runs' times
    const stream = await streamRuns(a, b);
    const streamWallMs = performance.now() - streamStarted;
    const times = await b.ask('classify-times');
    const streamOtherCpu = Math.max(0, ((machineBusyMs() - machineBefore - (await ours() - oursBefore)) / streamWallMs) * 100);
    console.log(`  ${fixed(streamWallMs / 1000, 1)} s; other cpu% meanwhile ${fixed(streamOtherCpu, 0)}`);
    if (times.type === 'classify-times' && times.served !== undefined && times.backToBack !== undefined) {
      // A classification between other work can cost several times one in a loop: both are printed.
      console.log(`  classification in the gateway (decision.micros): median ${fixed(times.served, 1)} µs over ${times.requests} requests; the same two turns back to back in that process: median ${fixed(times.backToBack, 1)} µs`);
    }
    console.log('');

    const of = (setup: 'A' | 'B') => runs.filter((run) => run.setup === setup);
    const summary = (setup: 'A' | 'B') => ({
      reqPerSec: median(of(setup).map((run) => run.reqPerSec)),
      p50: median(of(setup).map((run) => run.p50)),
      p99: median(of(setup).map((run) => run.p99)),
      errors: of(setup).reduce((sum, run) => sum + run.errors + run.timeouts, 0),
      non2xx: of(setup).reduce((sum, run) => sum + run.non2xx, 0),
      serverCpu: median(of(setup).map((run) => run.serverCpu)),
      cpuPerRequest: median(of(setup).map(perRequest)),
    });
    const sa = summary('A');
    const sb = summary('B');
    const ttfbA = Float64Array.from(stream.a).sort();
    const ttfbB = Float64Array.from(stream.b).sort();
    const ttfb = { a: quantile(ttfbA, 0.5), b: quantile(ttfbB, 0.5), a90: quantile(ttfbA, 0.9), b90: quantile(ttfbB, 0.9) };

    const throughputRatio = sb.reqPerSec / sa.reqPerSec;
    const p99Delta = sb.p99 - sa.p99;
    const ttfbRatio = ttfb.b / ttfb.a;

    console.log(`summary (median of ${ROUNDS} runs per setup; SSE: median and p90 of ${SSE_REQUESTS} requests):`);
    console.log(table([
      ['setup', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', 'srv µs/req', 'ttfb p50 ms', 'ttfb p90 ms', 'sse failures'],
      ['A bare proxy', fixed(sa.reqPerSec, 0), fixed(sa.p50, 2), fixed(sa.p99, 2), String(sa.errors), String(sa.non2xx), fixed(sa.cpuPerRequest, 0), fixed(ttfb.a, 3), fixed(ttfb.a90, 3), String(stream.failures.a)],
      ['B gateway', fixed(sb.reqPerSec, 0), fixed(sb.p50, 2), fixed(sb.p99, 2), String(sb.errors), String(sb.non2xx), fixed(sb.cpuPerRequest, 0), fixed(ttfb.b, 3), fixed(ttfb.b90, 3), String(stream.failures.b)],
      ['B vs A', `x${fixed(throughputRatio, 3)}`, signed(sb.p50 - sa.p50, 2), signed(p99Delta, 2), '', '', `x${fixed(sb.cpuPerRequest / sa.cpuPerRequest, 3)}`, `x${fixed(ttfbRatio, 3)}`, `x${fixed(ttfb.b90 / ttfb.a90, 3)}`, ''],
    ], new Set([1, 2, 3, 4, 5, 6, 7, 8, 9])).replace(/^/gm, '  '));
    console.log('');

    const verdict = (pass: boolean) => (pass ? 'PASS' : 'MISS');
    console.log('targets:');
    console.log(table([
      ['throughput gateway/bare', fixed(throughputRatio, 3), `>= ${TARGET_THROUGHPUT_RATIO}`, verdict(throughputRatio >= TARGET_THROUGHPUT_RATIO)],
      ['p99 gateway - bare', `${signed(p99Delta, 2)} ms`, `<= ${TARGET_P99_DELTA_MS} ms`, verdict(p99Delta <= TARGET_P99_DELTA_MS)],
      ['first SSE chunk gateway/bare', fixed(ttfbRatio, 3), `<= ${TARGET_TTFB_RATIO}`, verdict(ttfbRatio <= TARGET_TTFB_RATIO)],
    ], new Set([1])).replace(/^/gm, '  '));
    const problems = sa.errors + sa.non2xx + sb.errors + sb.non2xx + stream.failures.a + stream.failures.b;
    if (problems > 0) console.log(`  note: ${problems} errors / non-2xx / failed streams in the runs above; the figures are suspect`);
    const busiest = Math.max(streamOtherCpu, ...runs.map((run) => run.otherCpu));
    if (busiest > NOISY_OTHER_CPU) {
      console.log(`  note: other processes used up to ${fixed(busiest, 0)}% CPU (of ${os.availableParallelism() * 100}) during the measurements; the figures are noisy, rerun on a quiet machine`);
    }
  } finally {
    // Servers first (they hold pooled sockets to the upstream), then the upstream.
    for (const child of children.slice(1).reverse()) await child.close();
    await upstream.close();
  }
}

if (argv.includes('--serve')) {
  const kind = option('--serve');
  const upstreamUrl = option('--upstream');
  if ((kind !== 'bare' && kind !== 'gateway') || !upstreamUrl) {
    process.stderr.write('--serve needs bare|gateway and --upstream URL\n');
    process.exit(2);
  }
  await serve(kind, upstreamUrl);
} else {
  await main();
}
