/**
 * Scale benchmark: what more workers and shared state cost and give. Prints figures and a PASS/MISS
 * "targets" section; asserts nothing; bounded; stops by itself. All traffic stays on 127.0.0.1.
 *
 *   node dist/bench/scale.js [--duration N] [--quick] [--connections N] [--workers N] [--rate N]
 *
 *   --duration N     seconds of load per timed run (default 10)
 *   --quick          3 s runs, 1 s warm-ups: a smoke run
 *   --connections N  autocannon connections at saturation (default 50)
 *   --workers N      workers of the cluster compared with one worker (default: the number of cores)
 *   --rate N         requests per second of the latency runs (default 100): well below saturation, so
 *                    latency is service time, not queueing
 *
 * Two comparisons, each run A B A B interleaved, each figure the median of its runs:
 *   1. throughput at saturation, `serve --workers 1` against `serve --workers N` (in-memory state);
 *   2. latency at a fixed rate of requests that carry a session header (so failure-debate state is read
 *      and written on every request): one worker with in-memory state against one with Redis.
 * Every process (the fake upstream, the gateways, redis-server) runs apart from the load generator, but
 * on this machine's cores: where the cores are few, the load generator takes its share of them, and
 * the cluster's measured gain is less than it would be with the load generator elsewhere. The CPU each
 * process used is measured (Linux /proc), and the projection is made from the gateway's CPU per request.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createClient } from 'redis';
import { spawnReady, terminate, track } from './children.js';
import { machineBusyNs, processCpuNs, selfCpuNs } from './cpu.js';

// ---------------------------------------------------------------------------------------------------
// Settings

const argv = process.argv.slice(2);

function option(name: string): string | undefined {
  const index = argv.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (index < 0) return undefined;
  const arg = argv[index] as string;
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

const CORES = os.availableParallelism();
const QUICK = argv.includes('--quick');
const DURATION_S = positive('--duration', QUICK ? 3 : 10);
const WARMUP_S = QUICK ? 1 : 2;
const CONNECTIONS = Math.round(positive('--connections', 50));
const WORKERS = Math.max(2, Math.round(positive('--workers', CORES)));
const RATE = positive('--rate', 100);
const ROUNDS = 3;
const HOST = '127.0.0.1';
const CHAT_PATH = '/v1/chat/completions';
const SESSIONS = 1000;

const READY_TIMEOUT_MS = 120_000;
const EXIT_TIMEOUT_MS = 45_000;
const REQUEST_TIMEOUT_MS = 30_000;

const TARGET_REDIS_P50_MS = 0.3;
const TARGET_WORKER_RATIO = 1.7;

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = resolve(HERE, '..', '..');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const UPSTREAM = join(HERE, 'upstream.js');

// ---------------------------------------------------------------------------------------------------
// Requests: a client system prompt and a short history; the last turn alternates ANSWER and ACTION.

const TURNS = [
  'Why would the new queue worker cause more lock waits than the old cron job did?',
  'Run the export job against the staging queue and fix the retry backoff in services/billing/src/jobs/export.ts.',
];

function chatBody(turn: string): string {
  return JSON.stringify({
    model: 'gpt-4o-mini',
    max_tokens: 512,
    messages: [
      { role: 'system', content: 'You are the engineering assistant of the payments team. Be precise and brief.' },
      { role: 'user', content: 'The nightly billing export has been flaky since it moved to the new queue worker.' },
      { role: 'assistant', content: 'A job that usually takes 4 minutes but sometimes times out is most often waiting: a lock, a pool, a retry loop.' },
      { role: 'user', content: turn },
    ],
  });
}

const BODIES = TURNS.map(chatBody);
let sequence = 0;

function headers(session: boolean): Record<string, string> {
  sequence += 1;
  return {
    'content-type': 'application/json',
    authorization: 'Bearer sk-bench-not-a-real-key',
    ...(session ? { 'x-task-router-session': `bench-${sequence % SESSIONS}` } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Numbers

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

function median(values: readonly number[]): number {
  return percentile([...values].sort((x, y) => x - y), 50);
}

const fixed = (value: number, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

function table(rows: readonly (readonly string[])[]): string {
  const widths = (rows[0] ?? []).map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows.map((row) => `  ${row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  ')}`).join('\n');
}

// ---------------------------------------------------------------------------------------------------
// CPU accounting (Linux)


// ---------------------------------------------------------------------------------------------------
// Processes

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

const stopped = (child: ChildProcess) => terminate(child, EXIT_TIMEOUT_MS);

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolveListen) => server.listen(0, HOST, resolveListen));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolveClose) => server.close(() => resolveClose()));
  return port;
}

/** A gateway under test (`task-router serve`), its primary and worker pids for CPU accounting. */
class Gateway {
  private constructor(readonly label: string, readonly proc: ChildProcess, readonly pids: readonly number[], readonly url: string) {}

  static async start(label: string, file: string, workers: number, env: NodeJS.ProcessEnv): Promise<Gateway> {
    const pids: number[] = [];
    let url = '';
    const child = await spawnReady(label, [CLI, 'serve', '--config', file, '--workers', String(workers)], { cwd: ROOT, env, timeoutMs: READY_TIMEOUT_MS }, (line) => {
      let entry: { msg?: string; url?: string; pid?: number };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        return false;
      }
      if (entry.msg === 'worker listening' && typeof entry.pid === 'number') pids.push(entry.pid);
      if (entry.msg === 'task-router listening' && typeof entry.url === 'string') url ||= entry.url;
      return url !== '';
    });
    if (child.proc.pid !== undefined) pids.unshift(child.proc.pid);
    return new Gateway(label, child.proc, pids, url);
  }

  /** CPU of each worker, ns (none without a cluster); null where /proc cannot be read. */
  workerCpuNs(): (number | null)[] {
    return this.pids.slice(1).map((pid) => processCpuNs(pid));
  }

  /** CPU of the primary and every worker, ns; null where /proc cannot be read. */
  cpuNs(): number | null {
    let total = 0;
    for (const pid of this.pids) {
      const ns = processCpuNs(pid);
      if (ns === null) return null;
      total += ns;
    }
    return total;
  }

  stop(): Promise<void> {
    return stopped(this.proc);
  }
}

async function startUpstream(): Promise<{ url: string; proc: ChildProcess }> {
  const proc = fork(UPSTREAM, [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  track(proc);
  return new Promise((resolveReady, reject) => {
    const timer = setTimeout(() => reject(new Error('the fake upstream was not ready in time')), READY_TIMEOUT_MS);
    proc.once('exit', (code) => reject(new Error(`the fake upstream exited (code ${code}) before it was ready`)));
    proc.on('message', (message: { url?: unknown }) => {
      if (typeof message?.url !== 'string') return;
      clearTimeout(timer);
      resolveReady({ url: message.url, proc });
    });
  });
}

/** redis-server on a free port, no persistence; null (and why) when it is not installed. */
async function startRedis(dir: string): Promise<{ url: string; proc: ChildProcess } | string> {
  if (spawnSync('redis-server', ['--version']).error) return 'redis-server is not installed (Debian: apt-get install redis-server): the Redis comparison is left out';
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  track(proc);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((answer) => {
      const socket = net.connect(port, HOST);
      socket.once('error', () => answer(false));
      socket.once('data', (chunk) => {
        socket.destroy();
        answer(chunk.toString().startsWith('+PONG'));
      });
      socket.once('connect', () => socket.write('PING\r\n'));
    });
    if (ok) return { url: `redis://${HOST}:${port}`, proc };
    await new Promise((wait) => setTimeout(wait, 50));
  }
  return 'redis-server did not answer within 10 s: the Redis comparison is left out';
}

// ---------------------------------------------------------------------------------------------------
// Load

interface Measured {
  readonly requests: number;
  readonly errors: number;
  readonly reqPerSec: number;
  readonly p50: number;
  readonly p99: number;
  /** Gateway CPU (primary and workers) per 2xx response, µs. */
  readonly cpuUs: number;
  /** Share of one core, %, during the run. */
  readonly gatewayPct: number;
  readonly loadgenPct: number;
  readonly otherPct: number;
  /** The busiest worker's share of the workers' CPU, %; NaN for one process without workers. */
  readonly busiestWorkerPct: number;
}

/** Closed-loop load at saturation with autocannon. */
function saturate(url: string, seconds: number, session: boolean): Promise<{ ok: number; errors: number; latencies: number[] }> {
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  return new Promise((resolveRun, reject) => {
    const instance = autocannon({
      url,
      connections: CONNECTIONS,
      duration: seconds,
      timeout: REQUEST_TIMEOUT_MS / 1000,
      requests: [{ method: 'POST', path: CHAT_PATH, setupRequest: (request) => ({ ...request, headers: headers(session), body: BODIES[sequence % BODIES.length] as string }) }],
    }, (error) => (error ? reject(error) : resolveRun({ ok, errors, latencies })));
    instance.on('response', (_client, status, _bytes, responseTime) => {
      if (status >= 200 && status < 300) {
        ok += 1;
        latencies.push(responseTime);
      } else {
        errors += 1;
      }
    });
    instance.on('reqError', () => {
      errors += 1;
    });
  });
}

/** Open-loop load at RATE requests per second, each with a session header; resolves once all have answered. */
async function paced(url: string, seconds: number): Promise<{ ok: number; errors: number; latencies: number[] }> {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  const total = Math.max(1, Math.round(RATE * seconds));
  const pending: Promise<void>[] = [];
  const send = () => new Promise<void>((settle) => {
    const body = BODIES[sequence % BODIES.length] as string;
    const started = performance.now();
    const request = http.request({ agent, hostname: target.hostname, port: target.port, method: 'POST', path: CHAT_PATH, headers: { ...headers(true), 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.on('data', () => {});
      response.once('end', () => {
        if ((response.statusCode ?? 0) >= 200 && (response.statusCode ?? 0) < 300) {
          ok += 1;
          latencies.push(performance.now() - started);
        } else {
          errors += 1;
        }
        settle();
      });
    });
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error('timeout')));
    request.once('error', () => {
      errors += 1;
      settle();
    });
    request.end(body);
  });
  const start = performance.now();
  for (let sent = 0; sent < total; sent += 1) {
    const due = start + (sent * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((later) => setTimeout(later, wait));
    pending.push(send());
  }
  await Promise.all(pending);
  agent.destroy();
  return { ok, errors, latencies };
}

/** saturate: autocannon, no session header; saturate-sessions: the same with one; paced: RATE req/s with one. */
async function measure(gateway: Gateway, kind: 'saturate' | 'saturate-sessions' | 'paced', seconds: number): Promise<Measured> {
  const before = { gateway: gateway.cpuNs(), workers: gateway.workerCpuNs(), loadgen: selfCpuNs(), machine: machineBusyNs() };
  const started = performance.now();
  const run = kind === 'paced' ? await paced(gateway.url, seconds) : await saturate(gateway.url, seconds, kind === 'saturate-sessions');
  const wallNs = (performance.now() - started) * 1e6;
  const after = { gateway: gateway.cpuNs(), workers: gateway.workerCpuNs(), loadgen: selfCpuNs(), machine: machineBusyNs() };
  const workerNs = after.workers.map((ns, index) => {
    const start = before.workers[index] ?? null;
    return ns === null || start === null ? Number.NaN : ns - start;
  });
  const gatewayNs = before.gateway === null || after.gateway === null ? Number.NaN : after.gateway - before.gateway;
  const loadgenNs = after.loadgen - before.loadgen;
  const sorted = [...run.latencies].sort((x, y) => x - y);
  return {
    requests: run.ok,
    errors: run.errors,
    reqPerSec: run.ok / (wallNs / 1e9),
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    cpuUs: gatewayNs / 1000 / Math.max(1, run.ok),
    gatewayPct: (100 * gatewayNs) / wallNs,
    loadgenPct: (100 * loadgenNs) / wallNs,
    otherPct: (100 * (after.machine - before.machine - gatewayNs - loadgenNs)) / wallNs,
    busiestWorkerPct: workerNs.length === 0 ? Number.NaN : (100 * Math.max(...workerNs)) / workerNs.reduce((sum, ns) => sum + ns, 0),
  };
}

/** Median of each figure over the runs. */
function summary(runs: readonly Measured[]): Measured {
  const of = (pick: (run: Measured) => number) => median(runs.map(pick));
  return {
    requests: of((run) => run.requests), errors: runs.reduce((sum, run) => sum + run.errors, 0), reqPerSec: of((run) => run.reqPerSec),
    p50: of((run) => run.p50), p99: of((run) => run.p99), cpuUs: of((run) => run.cpuUs),
    gatewayPct: of((run) => run.gatewayPct), loadgenPct: of((run) => run.loadgenPct), otherPct: of((run) => run.otherPct),
    busiestWorkerPct: of((run) => run.busiestWorkerPct),
  };
}

async function stateFallbacks(url: string): Promise<number> {
  const text = await new Promise<string>((resolveGet, reject) => {
    http.get(`${url}/metrics`, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => (body += part));
      response.once('end', () => resolveGet(body));
    }).once('error', reject);
  });
  return text.split('\n').filter((line) => line.startsWith('task_router_fallbacks_total{stage="state"')).reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

/** Round trips (PING) from this process to Redis, ms: what one Redis call costs on this machine now, before any gateway work. */
async function redisRoundTrips(url: string, count: number): Promise<{ p50: number; p99: number }> {
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  const times: number[] = [];
  try {
    for (let index = 0; index < count; index += 1) {
      const started = performance.now();
      await client.ping();
      times.push(performance.now() - started);
      // Spread out like the requests of the latency runs, not back to back.
      await new Promise((later) => setTimeout(later, 1000 / RATE));
    }
  } finally {
    client.destroy();
  }
  const sorted = times.sort((x, y) => x - y);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

// ---------------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const tmp = await mkdtemp(join(os.tmpdir(), 'task-router-bench-scale-'));
  const gateways: Gateway[] = [];
  try {
    const upstream = await startUpstream();
    const redis = await startRedis(tmp);
    const config = join(tmp, 'bench.yaml');
    await writeFile(config, `server: { host: ${HOST}, port: 0 }\nupstream: { url: ${upstream.url} }\nreload: { watch: false }\nlogging: { dir: ${join(tmp, 'logs')} }\n`);
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info' };
    for (const name of ['PORT', 'HOST', 'UPSTREAM_URL', 'WORKERS', 'REDIS_URL', 'ENABLE_HARD_ROUTING', 'LOG_DIR', 'TASK_ROUTER_CONFIG', 'ADMIN_TOKEN', 'METRICS_TOKEN', 'NODE_OPTIONS']) delete env[name];

    process.stdout.write(`task-router scale bench: ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${CORES} cores, Node ${process.version}\n`);
    process.stdout.write(`runs of ${DURATION_S} s after ${WARMUP_S} s warm-ups, ${ROUNDS} rounds interleaved; medians\n\n`);
    // One at a time: starting gateways compete for the same cores.
    const one = await Gateway.start('1 worker', config, 1, env);
    gateways.push(one);
    const many = await Gateway.start(`${WORKERS} workers`, config, WORKERS, env);
    gateways.push(many);
    const shared = typeof redis === 'string' ? null : await Gateway.start('1 worker, Redis state', config, 1, { ...env, REDIS_URL: redis.url });
    if (shared) gateways.push(shared);

    // 1. Throughput at saturation.
    const throughput = new Map<Gateway, Measured[]>([[one, []], [many, []]]);
    for (const gateway of [one, many]) await saturate(gateway.url, WARMUP_S, false);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const gateway of [one, many]) throughput.get(gateway)?.push(await measure(gateway, 'saturate', DURATION_S));
    }
    const single = summary(throughput.get(one) ?? []);
    const cluster = summary(throughput.get(many) ?? []);
    process.stdout.write(`1. Throughput at saturation (autocannon, ${CONNECTIONS} connections, no session header)\n`);
    process.stdout.write(`${table([
      ['', 'req/s', 'p50 ms', 'p99 ms', 'gateway CPU µs/req', 'gateway % core', 'load gen % core', 'other % core', 'errors'],
      ...[[one, single], [many, cluster]].map(([gateway, figures]) => {
        const m = figures as Measured;
        return [(gateway as Gateway).label, fixed(m.reqPerSec, 0), fixed(m.p50), fixed(m.p99), fixed(m.cpuUs, 0), fixed(m.gatewayPct, 0), fixed(m.loadgenPct, 0), fixed(m.otherPct, 0), String(m.errors)];
      }),
    ])}\n`);
    const measuredRatio = cluster.reqPerSec / single.reqPerSec;
    const usableCores = Math.min(WORKERS, CORES);
    // With the load generator elsewhere, one worker is bound by one core and N workers by N cores (less the primary's share).
    const projectedRatio = (usableCores / cluster.cpuUs) / (1 / single.cpuUs);
    process.stdout.write(`  measured ratio here: x${fixed(measuredRatio, 2)}. The load generator used ${fixed(cluster.loadgenPct, 0)}% of a core during the ${WORKERS}-worker runs, out of ${CORES * 100}%: it competes with the workers for this machine's cores.\n`);
    process.stdout.write(`  projected with the load generator elsewhere: ${usableCores} cores / ${fixed(cluster.cpuUs, 0)} µs per request against 1 core / ${fixed(single.cpuUs, 0)} µs = x${fixed(projectedRatio, 2)}\n`);
    process.stdout.write(`  split between the workers: the busiest of the ${WORKERS} took ${fixed(cluster.busiestWorkerPct, 0)}% of the workers' CPU (even: ${fixed(100 / WORKERS, 0)}%)\n\n`);

    // 2. Latency with session state in Redis against in memory.
    let redisFigures: { memory: Measured; redis: Measured; fallbacks: number } | null = null;
    if (shared) {
      const latency = new Map<Gateway, Measured[]>([[one, []], [shared, []]]);
      const loaded = new Map<Gateway, Measured[]>([[one, []], [shared, []]]);
      for (const gateway of [one, shared]) await paced(gateway.url, WARMUP_S);
      const compared: readonly Gateway[] = [one, shared];
      let pacedFallbacks = 0;
      let saturatedFallbacks = 0;
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const gateway of compared) {
          const before = gateway === shared ? await stateFallbacks(shared.url) : 0;
          latency.get(gateway)?.push(await measure(gateway, 'paced', DURATION_S));
          if (gateway === shared) pacedFallbacks += (await stateFallbacks(shared.url)) - before;
        }
        for (const gateway of compared) {
          const before = gateway === shared ? await stateFallbacks(shared.url) : 0;
          loaded.get(gateway)?.push(await measure(gateway, 'saturate-sessions', DURATION_S));
          if (gateway === shared) saturatedFallbacks += (await stateFallbacks(shared.url)) - before;
        }
      }
      redisFigures = { memory: summary(latency.get(one) ?? []), redis: summary(latency.get(shared) ?? []), fallbacks: pacedFallbacks };
      const saturated = { memory: summary(loaded.get(one) ?? []), redis: summary(loaded.get(shared) ?? []) };
      const rtt = typeof redis === 'string' ? null : await redisRoundTrips(redis.url, 300);
      const { memory, redis: inRedis } = redisFigures;
      process.stdout.write(`2. Latency with a session header on every request (${RATE} req/s, ${SESSIONS} sessions; 1 worker)\n`);
      process.stdout.write(`${table([
        ['', 'p50 ms', 'p99 ms', 'gateway CPU µs/req', 'errors'],
        ['in-memory state', fixed(memory.p50, 2), fixed(memory.p99, 2), fixed(memory.cpuUs, 0), String(memory.errors)],
        ['state in Redis', fixed(inRedis.p50, 2), fixed(inRedis.p99, 2), fixed(inRedis.cpuUs, 0), String(inRedis.errors)],
        ['added by Redis', `${inRedis.p50 - memory.p50 >= 0 ? '+' : ''}${fixed(inRedis.p50 - memory.p50, 2)}`, `${inRedis.p99 - memory.p99 >= 0 ? '+' : ''}${fixed(inRedis.p99 - memory.p99, 2)}`, `${inRedis.cpuUs - memory.cpuUs >= 0 ? '+' : ''}${fixed(inRedis.cpuUs - memory.cpuUs, 0)}`, ''],
      ])}\n`);
      process.stdout.write(`  at saturation with the session header (autocannon, ${CONNECTIONS} connections): in memory ${fixed(saturated.memory.reqPerSec, 0)} req/s, ${fixed(saturated.memory.cpuUs, 0)} µs CPU/req, p50 ${fixed(saturated.memory.p50)} ms; in Redis ${fixed(saturated.redis.reqPerSec, 0)} req/s, ${fixed(saturated.redis.cpuUs, 0)} µs CPU/req, p50 ${fixed(saturated.redis.p50)} ms: Redis costs ${fixed(saturated.redis.cpuUs - saturated.memory.cpuUs, 0)} µs of gateway CPU per request; ${saturatedFallbacks} of ${ROUNDS * Math.round(saturated.redis.requests)} requests fell back to local state (Redis slower than state.redis.timeoutMs under this load)\n`);
      process.stdout.write(`  requests of the ${RATE} req/s runs that fell back to local state: ${redisFigures.fallbacks} (0: every request read and wrote Redis)\n`);
      if (rtt) process.stdout.write(`  one Redis round trip (PING from the load generator, ${RATE}/s) on this machine now: p50 ${fixed(rtt.p50, 3)} ms, p99 ${fixed(rtt.p99, 3)} ms; a session update is one round trip when the session's last update was on the same replica, two when it moved\n\n`);
    } else {
      process.stdout.write(`2. Latency with state in Redis: ${String(redis)}\n\n`);
    }

    process.stdout.write('targets\n');
    if (redisFigures) {
      const added = redisFigures.redis.p50 - redisFigures.memory.p50;
      process.stdout.write(`  Redis-backed state adds <= ${TARGET_REDIS_P50_MS} ms p50: ${added <= TARGET_REDIS_P50_MS ? 'PASS' : 'MISS'} (${added >= 0 ? '+' : ''}${fixed(added, 2)} ms)\n`);
    }
    process.stdout.write(`  ${WORKERS} workers give >= x${TARGET_WORKER_RATIO} one worker's throughput, load generator elsewhere (projected from CPU per request): ${projectedRatio >= TARGET_WORKER_RATIO ? 'PASS' : 'MISS'} (x${fixed(projectedRatio, 2)}; measured here, load generator on the same ${CORES} cores: x${fixed(measuredRatio, 2)})\n`);
    if (single.gatewayPct < 90) process.stdout.write(`  note: the single worker used ${fixed(single.gatewayPct, 0)}% of a core at saturation, so it was not CPU-bound and the projection overstates the gain\n`);

    for (const gateway of gateways) await gateway.stop();
    if (typeof redis !== 'string') await stopped(redis.proc);
    if (upstream.proc.connected) upstream.proc.send({ type: 'close' });
    await stopped(upstream.proc);
  } finally {
    for (const gateway of gateways) if (gateway.proc.exitCode === null) gateway.proc.kill('SIGKILL');
    await rm(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
