/**
 * Gateway overhead benchmark: task-router as `npm start` runs it, against reference proxies and the Portkey
 * gateway, all in front of the same fake upstream (bench/upstream.ts). Prints figures and a PASS/MISS
 * "targets" section; asserts nothing; bounded; stops by itself. Everything listens on 127.0.0.1.
 *
 *   node dist/bench/gateway.js [--quick] [--rounds N] [--duration S] [--connections N] [--rate N]
 *                              [--only a,c,...] [--aa a|c] [--baseline DIR] [--sse N] [--no-sessions] [--tool-rounds N] [--cpu-prof] [--cpu-prof-dir DIR] [--keep-logs]
 *
 *   --quick          smoke run: one round of 1 s runs (under a minute on a quiet machine)
 *   --rounds N       interleaved rounds (default 3); figures are medians over rounds with min–max
 *   --duration S     seconds of each timed saturation and fixed-rate run (default 5)
 *   --connections N  autocannon connections at saturation (default 32)
 *   --rate N         requests per second of the fixed-rate runs (default 300)
 *   --only LIST      setups to run, e.g. a,c (default a,b,c,d,e,f)
 *   --aa a|c         what the A/A setup (f) duplicates (default a)
 *   --baseline DIR   (f) is instead (c) run from another built checkout of task-router, DIR: a change
 *                    measured against the build before it, interleaved in one run
 *   --sse N          streamed requests per setup per round for the first-chunk times (default 40)
 *   --no-sessions    send no x-task-router-session header (by default requests name one of 64 sessions, so
 *                    task-router's session tracking is on the path, as for a client that uses debates)
 *   --tool-rounds N  put N rounds of an agent's tool calls and results before the latest turn (about 590 bytes
 *                    each: 50 make a coding agent's 30 KB conversation); default none
 *   --cpu-prof       start (c) with node --cpu-prof: a profile of its whole life, written when it exits
 *                    (all of (c)'s figures then carry the profiler's overhead)
 *   --keep-logs      keep the temporary folder with (c)'s and (d)'s decision and memory logs
 *
 * Setups, each its own process:
 *   (a) Express + http-proxy-middleware, no body parser (bench/passthrough.ts)
 *   (b) (a) + JSON.parse and re-serialisation of the body (bench/passthrough.ts --parse)
 *   (c) task-router: node dist/cli/main.js serve with the shipped config/default.yaml (hard routing)
 *   (d) the same with ENABLE_HARD_ROUTING=false (soft routing)
 *   (e) the Portkey gateway: node node_modules/@portkey-ai/gateway/build/start-server.js --headless
 *   (f) A/A: a second, identical instance of (a) (or of (c) with --aa c)
 *
 * Each round runs every setup in turn (the order rotates between rounds): a warm-up, a saturation run with
 * varying bodies, a saturation run repeating one body, a fixed-rate run; then streamed requests for the
 * time to the first SSE event, interleaved request by request. Server CPU is the process's own CPU time
 * (all its threads, /proc/PID/task/TID/schedstat), divided by the responses of the run.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createClassifier } from '../src/index.js';
import { BodySource, chatBody, DISTINCT_TURNS, latestTurn } from './bodies.js';
import { CHAT_PATH, SSE_CHUNKS, type UpstreamStats } from './upstream.js';
import { alive, lastOutput, spawnReady, terminate, track, type Spawned } from './children.js';
import { machineBusyNs, processCpuNs, selfCpuNs } from './cpu.js';

// ---------------------------------------------------------------------------------------------------
// Settings

const argv = process.argv.slice(2);

function option(name: string): string | undefined {
  const index = argv.findIndex((arg) => arg === name || arg.startsWith(`${name}=`));
  if (index < 0) return undefined;
  const arg = argv[index]!;
  return arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[index + 1];
}

function usage(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function positive(name: string, fallback: number, integer = false): number {
  const raw = option(name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) usage(`${name} needs a positive ${integer ? 'whole ' : ''}number, got "${raw}"`);
  return value;
}

type Key = 'a' | 'b' | 'c' | 'd' | 'e' | 'f';
const ALL_KEYS: readonly Key[] = ['a', 'b', 'c', 'd', 'e', 'f'];

const QUICK = argv.includes('--quick');
const ROUNDS = positive('--rounds', QUICK ? 1 : 3, true);
const DURATION_S = positive('--duration', QUICK ? 1 : 5);
/** The repeated-body saturation run is shorter: it is a second view of the same load. */
const SAME_S = Math.max(0.5, Math.round(DURATION_S * 0.6 * 10) / 10);
const WARMUP_S = QUICK ? 0.5 : 1;
/**
 * The first warm-up of each setup is longer: its JIT is cold, and a server is measured as it runs for
 * hours (task-router's CPU per request still fell by a sixth between 2 s and 8 s of load).
 */
const FIRST_WARMUP_S = QUICK ? 2 : 8;
const CONNECTIONS = positive('--connections', 32, true);
const RATE = positive('--rate', 300, true);
const SSE_REQUESTS = positive('--sse', QUICK ? 10 : 40, true);
const SSE_WARMUP = QUICK ? 2 : 5;
/** Gap between the fake upstream's SSE chunks in this bench: only the first one is timed. */
const SSE_GAP_MS = 5;
const PROFILE = argv.includes('--cpu-prof');
const PROFILE_DIR = resolve(option('--cpu-prof-dir') ?? os.tmpdir());
const KEEP_LOGS = argv.includes('--keep-logs');
const SESSION_HEADER = !argv.includes('--no-sessions');
const TOOL_ROUNDS = positive('--tool-rounds', 0, true);
const BASELINE = option('--baseline') === undefined ? null : resolve(option('--baseline') as string);
if (BASELINE !== null && !existsSync(join(BASELINE, 'dist', 'cli', 'main.js'))) usage(`--baseline needs a built checkout of task-router (${join(BASELINE, 'dist', 'cli', 'main.js')} not found: run npm ci and npm run build there)`);
const AA_OF = (BASELINE === null ? (option('--aa') ?? 'a') : 'c') as Key;
if (AA_OF !== 'a' && AA_OF !== 'c') usage(`--aa takes a or c, got "${AA_OF}"`);
const ONLY = (option('--only') ?? ALL_KEYS.join(',')).split(',').map((key) => key.trim().toLowerCase()).filter(Boolean);
for (const key of ONLY) if (!ALL_KEYS.includes(key as Key)) usage(`--only takes setups from a,b,c,d,e,f, got "${key}"`);
const SELECTED: readonly Key[] = ALL_KEYS.filter((key) => ONLY.includes(key));

const READY_TIMEOUT_MS = 20_000;
const IPC_TIMEOUT_MS = 15_000;
const REQUEST_TIMEOUT_MS = 10_000;
const EXIT_TIMEOUT_MS = 8_000;
/** After a run, the upstream must have had no request for this long before the next run starts. */
const QUIET_MS = 150;
/** Longest wait for that quiet: a server still working off a backlog. */
const QUIET_TIMEOUT_MS = 5_000;
/** Above this much CPU used by other processes during a run (% of one core), the figures are flagged noisy. */
const NOISY_OTHER_CPU = 25;
/** One request of the whole fixed-rate run may not finish later than this after the schedule ends. */
const DRAIN_TIMEOUT_MS = 10_000;

const TARGET = {
  cpuOverheadUs: 180,
  throughputVsParse: 0.9,
  p99AddedMs: 1,
  firstChunkAddedMs: 0.3,
  /** Classifying the latest turn inside (c), against the same kind of turn in a loop (medians). */
  classifyVsLoop: 2,
};

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const PORTKEY = join(ROOT, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js');
const PASSTHROUGH = fileURLToPath(new URL('./passthrough.js', import.meta.url));
const UPSTREAM = fileURLToPath(new URL('./upstream.js', import.meta.url));
const PORTKEY_PRELOAD = new URL('./portkey-preload.js', import.meta.url).href;

// ---------------------------------------------------------------------------------------------------
// Statistics and formatting

function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

function median(values: readonly number[]): number {
  const sorted = Float64Array.from(values.filter(Number.isFinite)).sort();
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const finite = (values: readonly number[]) => values.filter(Number.isFinite);
const fixed = (value: number, digits: number) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
const signed = (value: number, digits: number) => (Number.isFinite(value) ? `${value >= 0 ? '+' : ''}${value.toFixed(digits)}` : 'n/a');

/** Median over rounds, with the min–max of the rounds when there are several. */
function spread(values: readonly number[], digits: number, sign = false): string {
  const ok = finite(values);
  if (ok.length === 0) return 'n/a';
  const f = sign ? signed : fixed;
  const mid = f(median(ok), digits);
  if (ok.length === 1) return mid;
  return `${mid} (${f(Math.min(...ok), digits)}..${f(Math.max(...ok), digits)})`;
}

function table(rows: readonly (readonly string[])[], rightAligned: ReadonlySet<number>): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length)));
  return rows
    .map((row) => `  ${row.map((cell, column) => (rightAligned.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ').trimEnd()}`)
    .join('\n');
}

const allColumnsButFirst = (count: number) => new Set(Array.from({ length: count - 1 }, (_, i) => i + 1));

/** A server under test: spawned with stdout and stderr piped (and drained), ready when a line matches. */
class Server {
  private constructor(readonly key: Key, readonly label: string, readonly describe: string, private readonly child: Spawned, readonly url: string, readonly logDir: string | null) {}

  get proc(): ChildProcess {
    return this.child.proc;
  }

  static async start(key: Key, label: string, describe: string, args: readonly string[], env: NodeJS.ProcessEnv, ready: RegExp, logDir: string | null = null): Promise<Server> {
    let url = '';
    const child = await spawnReady(label, args, { cwd: ROOT, env, timeoutMs: READY_TIMEOUT_MS }, (line) => {
      url ||= ready.exec(line)?.[1] ?? '';
      return url !== '';
    });
    return new Server(key, label, describe, child, url, logDir);
  }

  cpuNs(): number {
    const ns = this.proc.pid === undefined ? null : processCpuNs(this.proc.pid);
    if (ns === null) throw new Error(`cannot read the CPU time of ${this.label} (pid ${this.proc.pid}): is it still running?\n${lastOutput(this.child)}`);
    return ns;
  }

  check(): void {
    if (!alive(this.proc)) throw new Error(`${this.label} exited (code ${this.proc.exitCode}, signal ${this.proc.signalCode}) during the bench\n${lastOutput(this.child)}`);
  }

  stop(): Promise<void> {
    return terminate(this.proc, EXIT_TIMEOUT_MS);
  }
}

/** The fake upstream: a forked child with IPC for its tallies. */
class Upstream {
  private readonly waiting = new Map<string, (message: { type: string; stats?: UpstreamStats }) => void>();

  private constructor(readonly proc: ChildProcess, readonly url: string) {
    proc.on('message', (message: { type: string; stats?: UpstreamStats }) => {
      const resolveMessage = this.waiting.get(message.type);
      this.waiting.delete(message.type);
      resolveMessage?.(message);
    });
  }

  static start(): Promise<Upstream> {
    const proc = fork(UPSTREAM, ['--sse-gap-ms', String(SSE_GAP_MS)], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    track(proc);
    return new Promise((resolveReady, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`the fake upstream was not ready within ${READY_TIMEOUT_MS} ms`));
      }, READY_TIMEOUT_MS);
      proc.once('exit', (code) => reject(new Error(`the fake upstream exited (code ${code}) before it was ready`)));
      proc.once('message', (message: { type: string; url?: string }) => {
        clearTimeout(timer);
        if (message.type !== 'ready' || !message.url) return reject(new Error(`fake upstream: unexpected first message ${message.type}`));
        resolveReady(new Upstream(proc, message.url));
      });
    });
  }

  /** Tallies since the last call (and new ones from now). */
  stats(): Promise<UpstreamStats> {
    return new Promise((resolveStats, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete('stats');
        reject(new Error(`the fake upstream did not answer "stats" within ${IPC_TIMEOUT_MS} ms`));
      }, IPC_TIMEOUT_MS);
      this.waiting.set('stats', (message) => {
        clearTimeout(timer);
        resolveStats(message.stats!);
      });
      this.proc.send({ type: 'stats' });
    });
  }

  cpuNs(): number {
    return (this.proc.pid === undefined ? null : processCpuNs(this.proc.pid)) ?? Number.NaN;
  }

  stop(): Promise<void> {
    if (!alive(this.proc)) return Promise.resolve();
    return new Promise((resolveExit) => {
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), EXIT_TIMEOUT_MS);
      this.proc.once('exit', () => {
        clearTimeout(timer);
        resolveExit();
      });
      if (this.proc.connected) this.proc.send({ type: 'close' });
      else this.proc.kill('SIGTERM');
    });
  }
}

/** The environment a server starts with: this one, less what would change how the servers are configured. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['PORT', 'HOST', 'UPSTREAM_URL', 'ENABLE_HARD_ROUTING', 'LOG_DIR', 'LOG_LEVEL', 'TASK_ROUTER_CONFIG', 'ADMIN_TOKEN', 'METRICS_TOKEN',
    'NODE_OPTIONS', 'NODE_ENV', 'HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'NO_PROXY', 'no_proxy', 'TRUSTED_CUSTOM_HOSTS']) delete env[name];
  return { ...env, ...extra };
}

const LISTENING_LINE = /^listening (http:\/\/\S+)/;
const TASK_ROUTER_LISTENING = /"url":"(http:\/\/[^"]+)".*"msg":"task-router listening"/;

async function startSetup(key: Key, upstreamUrl: string, tmp: string): Promise<Server> {
  const taskRouter = async (own: Key, label: string, hard: boolean, profile: boolean, cli = CLI) => {
    const logDir = join(tmp, `logs-${own}`);
    const flags = profile ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR, '--cpu-prof-interval', '500'] : [];
    const env = cleanEnv({ PORT: '0', UPSTREAM_URL: upstreamUrl, LOG_DIR: logDir, ...(hard ? {} : { ENABLE_HARD_ROUTING: 'false' }) });
    return Server.start(own, label,
      `node ${flags.length ? `${flags.join(' ')} ` : ''}dist/cli/main.js serve, shipped config/default.yaml; env PORT=0 UPSTREAM_URL=<fake upstream> LOG_DIR=<tmp>${hard ? '' : ' ENABLE_HARD_ROUTING=false'}`,
      [...flags, cli, 'serve'], env, TASK_ROUTER_LISTENING, logDir);
  };
  const passthrough = (own: Key, label: string, parse: boolean) => Server.start(own, label,
    parse ? 'Express + http-proxy-middleware, body read, JSON.parse, JSON.stringify (fixRequestBody)' : 'Express + http-proxy-middleware, no body parser (request streamed through)',
    [PASSTHROUGH, '--upstream', upstreamUrl, ...(parse ? ['--parse'] : [])], cleanEnv({}), LISTENING_LINE);
  switch (key) {
    case 'a': return passthrough('a', '(a) passthrough', false);
    case 'b': return passthrough('b', '(b) parse+reserialise', true);
    case 'c': return taskRouter('c', '(c) task-router hard', true, PROFILE);
    case 'd': return taskRouter('d', '(d) task-router soft', false, false);
    case 'e': {
      if (!existsSync(PORTKEY)) throw new Error(`the Portkey gateway is not installed (${PORTKEY}); leave e out with --only`);
      return Server.start('e', '(e) Portkey gateway', 'node --import bench/portkey-preload node_modules/@portkey-ai/gateway/build/start-server.js --port=0 --headless; headers x-portkey-provider: openai, x-portkey-custom-host: <fake upstream>/v1',
        ['--import', PORTKEY_PRELOAD, PORTKEY, '--port=0', '--headless'], cleanEnv({}), LISTENING_LINE);
    }
    case 'f': {
      if (BASELINE !== null) return taskRouter('f', '(f) baseline build (c)', true, false, join(BASELINE, 'dist', 'cli', 'main.js'));
      return AA_OF === 'a' ? passthrough('f', '(f) A/A: 2nd (a)', false) : taskRouter('f', '(f) A/A: 2nd (c)', true, false);
    }
    default: throw new Error(`unknown setup ${String(key)}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Requests

let upstreamBase = '';
const SESSIONS = 64;
let sessionCounter = 0;

/** Headers every setup gets: the same bytes to all, so header parsing costs the same everywhere. */
function headers(session: number): Record<string, string> {
  return {
    'content-type': 'application/json',
    authorization: 'Bearer sk-bench-not-a-real-key',
    'x-portkey-provider': 'openai',
    'x-portkey-custom-host': `${upstreamBase}/v1`,
    ...(SESSION_HEADER ? { 'x-task-router-session': `bench-session-${session % SESSIONS}` } : {}),
  };
}

const SAME_BODY = chatBody(latestTurn(1), false, TOOL_ROUNDS);

interface Sample {
  /** Latency of each 2xx response, ms. */
  readonly latencies: number[];
  ok: number;
  non2xx: number;
  errors: number;
}

/** Load at saturation: autocannon, CONNECTIONS connections, for seconds. */
function saturate(url: string, seconds: number, same: boolean, sample: Sample | null): Promise<autocannon.Result> {
  const source = new BodySource(false, TOOL_ROUNDS);
  return new Promise((resolveRun, reject) => {
    const instance = autocannon(
      {
        url,
        connections: CONNECTIONS,
        duration: seconds,
        timeout: REQUEST_TIMEOUT_MS / 1000,
        requests: [
          same
            ? { method: 'POST', path: CHAT_PATH, headers: headers(0), body: SAME_BODY }
            : { method: 'POST', path: CHAT_PATH, setupRequest: (request) => ({ ...request, headers: headers(sessionCounter++), body: source.body() }) },
        ],
      },
      (error, result) => (error ? reject(error) : resolveRun(result)),
    );
    if (sample) {
      instance.on('response', (_client, status, _bytes, responseTime) => {
        if (status >= 200 && status < 300) {
          sample.ok += 1;
          sample.latencies.push(responseTime);
        } else {
          sample.non2xx += 1;
        }
      });
      instance.on('reqError', () => {
        sample.errors += 1;
      });
    }
  });
}

/** Open-loop load at a fixed rate: one request every 1/rate s on the schedule, whatever the answers do. */
async function paced(url: string, rate: number, seconds: number, sample: Sample): Promise<void> {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 });
  const source = new BodySource(false, TOOL_ROUNDS);
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  let inFlight = 0;
  let sent = 0;
  let drained: (() => void) | null = null;
  const settle = () => {
    inFlight -= 1;
    if (inFlight === 0 && sent === total) drained?.();
  };
  const send = () => {
    const body = source.body();
    const started = performance.now();
    inFlight += 1;
    const request = http.request({ agent, hostname: target.hostname, port: target.port, method: 'POST', path: CHAT_PATH, headers: { ...headers(sessionCounter++), 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.on('data', () => {});
      response.once('end', () => {
        const status = response.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          sample.ok += 1;
          sample.latencies.push(performance.now() - started);
        } else {
          sample.non2xx += 1;
        }
        settle();
      });
      response.once('error', () => {
        sample.errors += 1;
        settle();
      });
    });
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error('timeout')));
    request.once('error', () => {
      sample.errors += 1;
      settle();
    });
    request.end(body);
  };
  const start = performance.now();
  await new Promise<void>((resolveSchedule) => {
    const tick = () => {
      const now = performance.now();
      while (sent < total && start + sent * interval <= now) {
        sent += 1;
        send();
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
      else resolveSchedule();
    };
    tick();
  });
  if (inFlight > 0) {
    await new Promise<void>((resolveDrain) => {
      const timer = setTimeout(resolveDrain, DRAIN_TIMEOUT_MS);
      drained = () => {
        clearTimeout(timer);
        resolveDrain();
      };
    });
  }
  agent.destroy();
}

interface StreamResult {
  /** From the request to the first complete `data:` event, ms. */
  readonly firstEventMs: number;
  readonly ok: boolean;
}

/** One streamed request: time to its first complete SSE data event, then read to the end. */
function streamOnce(url: string, agent: http.Agent, index: number): Promise<StreamResult> {
  const target = new URL(url);
  const body = chatBody(latestTurn(index), true, TOOL_ROUNDS);
  return new Promise((resolveStream) => {
    const started = performance.now();
    let firstEventMs = Number.NaN;
    let text = '';
    const request = http.request({ agent, hostname: target.hostname, port: target.port, method: 'POST', path: CHAT_PATH, headers: { ...headers(index), accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.setEncoding('utf8');
      response.on('data', (part: string) => {
        text += part;
        if (Number.isNaN(firstEventMs)) {
          const at = text.indexOf('data: ');
          if (at >= 0 && text.indexOf('\n\n', at) >= 0) firstEventMs = performance.now() - started;
        }
      });
      response.once('end', () => {
        const events = text.split('\n\n').filter((event) => event.startsWith('data: ')).length;
        resolveStream({ firstEventMs, ok: response.statusCode === 200 && events === SSE_CHUNKS + 1 && text.includes('data: [DONE]') });
      });
      response.once('error', () => resolveStream({ firstEventMs, ok: false }));
    });
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error('timeout')));
    request.once('error', () => resolveStream({ firstEventMs, ok: false }));
    request.end(body);
  });
}

/** One non-streamed request, for the checks before timing. */
function post(url: string, body: string, session = 0): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const target = new URL(url);
  return new Promise((resolvePost, reject) => {
    const request = http.request({ hostname: target.hostname, port: target.port, method: 'POST', path: CHAT_PATH, headers: { ...headers(session), 'content-length': Buffer.byteLength(body) } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => (text += part));
      response.once('end', () => resolvePost({ status: response.statusCode ?? 0, headers: response.headers, text }));
      response.once('error', reject);
    });
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    request.once('error', reject);
    request.end(body);
  });
}

function get(url: string): Promise<string> {
  return new Promise((resolveGet, reject) => {
    const request = http.get(url, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (part: string) => (text += part));
      response.once('end', () => resolveGet(text));
      response.once('error', reject);
    });
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error('timeout')));
    request.once('error', reject);
  });
}

const pause = (ms: number) => new Promise((resolvePause) => setTimeout(resolvePause, ms));

/**
 * Waits until no request has reached the upstream for QUIET_MS (bounded): a server still working off the
 * backlog of the run before must not lend its CPU or its late requests to the next one.
 */
async function quiesce(upstream: Upstream): Promise<void> {
  const deadline = performance.now() + QUIET_TIMEOUT_MS;
  await upstream.stats();
  while (performance.now() < deadline) {
    await pause(QUIET_MS);
    if ((await upstream.stats()).requests === 0) return;
  }
}

// ---------------------------------------------------------------------------------------------------
// Measured runs

type Kind = 'sat' | 'same' | 'rate';

interface Run {
  readonly key: Key;
  readonly round: number;
  readonly kind: Kind;
  readonly wallMs: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly reqPerSec: number;
  readonly p50: number;
  readonly p99: number;
  /** Server CPU per 2xx response, µs. */
  readonly cpuUs: number;
  /** % of one core during the run. */
  readonly serverPct: number;
  readonly upstreamPct: number;
  readonly loadgenPct: number;
  readonly otherPct: number;
  readonly upstream: UpstreamStats;
}

interface Context {
  readonly servers: readonly Server[];
  readonly upstream: Upstream;
}

/** CPU of every process of the bench (servers, upstream, load generator), ns. */
function benchCpuNs(context: Context): number {
  return context.servers.reduce((sum, server) => sum + (processCpuNs(server.proc.pid ?? -1) ?? 0), 0) + context.upstream.cpuNs() + selfCpuNs();
}

async function measure(context: Context, server: Server, round: number, kind: Kind): Promise<Run> {
  server.check();
  const sample: Sample = { latencies: [], ok: 0, non2xx: 0, errors: 0 };
  await context.upstream.stats(); // starts new tallies
  const before = { server: server.cpuNs(), upstream: context.upstream.cpuNs(), loadgen: selfCpuNs(), machine: machineBusyNs(), bench: benchCpuNs(context) };
  const started = performance.now();
  if (kind === 'rate') await paced(server.url, RATE, DURATION_S, sample);
  else await saturate(server.url, kind === 'same' ? SAME_S : DURATION_S, kind === 'same', sample);
  const wallMs = performance.now() - started;
  const after = { server: server.cpuNs(), upstream: context.upstream.cpuNs(), loadgen: selfCpuNs(), machine: machineBusyNs(), bench: benchCpuNs(context) };
  const upstream = await context.upstream.stats();
  const pct = (ns: number) => (ns / 1e6 / wallMs) * 100;
  const sorted = Float64Array.from(sample.latencies).sort();
  const serverNs = after.server - before.server;
  return {
    key: server.key,
    round,
    kind,
    wallMs,
    ok: sample.ok,
    non2xx: sample.non2xx,
    errors: sample.errors,
    reqPerSec: sample.ok / (wallMs / 1000),
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    cpuUs: sample.ok > 0 ? serverNs / 1000 / sample.ok : Number.NaN,
    serverPct: pct(serverNs),
    upstreamPct: pct(after.upstream - before.upstream),
    loadgenPct: pct(after.loadgen - before.loadgen),
    otherPct: Math.max(0, pct(after.machine - before.machine - (after.bench - before.bench))),
    upstream,
  };
}

// ---------------------------------------------------------------------------------------------------
// Classification inside the gateway against a loop

interface FreshMicros {
  readonly all: number[];
  readonly streamed: number[];
}

/**
 * The classification times (µs) in a decision log of texts met for the first time: a text seen again may
 * be answered from the classifier's cache, and the same-body runs repeat one text. `streamed`: those of
 * the streamed requests, which the first-event phase sends one at a time to an otherwise idle gateway.
 */
async function freshClassifyMicros(dir: string): Promise<FreshMicros> {
  const all: number[] = [];
  const streamed: number[] = [];
  if (!existsSync(dir)) return { all, streamed };
  const seen = new Set<string>();
  for (const file of await readdir(dir)) {
    for (const line of (await readFile(join(dir, file), 'utf8')).split('\n')) {
      if (line === '') continue;
      const record = JSON.parse(line) as { textSha256?: string; micros?: number | null; stream?: boolean };
      if (typeof record.micros !== 'number' || record.textSha256 === undefined || seen.has(record.textSha256)) continue;
      seen.add(record.textSha256);
      all.push(record.micros);
      if (record.stream === true) streamed.push(record.micros);
    }
  }
  const ascending = (x: number, y: number) => x - y;
  return { all: all.sort(ascending), streamed: streamed.sort(ascending) };
}

const LOOP_WARMUP = 5000;
const LOOP_CALLS = 20_000;

/** The same measure (a decision's micros) for the benchmark's latest turns classified one after another by a classifier built as the gateway builds it. */
function loopClassifyMicros(): number[] {
  const classifier = createClassifier({ now: () => performance.now() });
  const micros: number[] = [];
  for (let i = 0; i < LOOP_WARMUP + LOOP_CALLS; i += 1) {
    const decision = classifier.classify(latestTurn((DISTINCT_TURNS - 1 - i) % DISTINCT_TURNS));
    if (i >= LOOP_WARMUP && decision.micros !== undefined) micros.push(decision.micros);
  }
  return micros;
}

// ---------------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const startedAt = performance.now();
  const tmp = await mkdtemp(join(os.tmpdir(), 'task-router-bench-'));
  const loadBefore = os.loadavg();
  const upstream = await Upstream.start();
  upstreamBase = upstream.url;
  const servers: Server[] = [];
  const stopAll = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    await upstream.stop();
  };
  cleanup = async () => {
    await stopAll();
    if (!KEEP_LOGS) await rm(tmp, { recursive: true, force: true });
  };
  let stopped = false;
  try {
    for (const key of SELECTED) servers.push(await startSetup(key, upstream.url, tmp));
    const context: Context = { servers, upstream };
    const byKey = new Map(servers.map((server) => [server.key, server]));

    const cpus = os.cpus();
    const cores = os.availableParallelism();
    console.log('task-router gateway benchmark');
    console.log(`node ${process.version}, ${cores} CPUs (${cpus[0]?.model.trim() ?? 'unknown'}), ${os.platform()} ${os.arch()}; load average ${loadBefore.map((value) => value.toFixed(2)).join(' ')} at start`);
    console.log(`${ROUNDS} rounds, setups interleaved (order rotates each round); per setup and round: ${FIRST_WARMUP_S} s warm-up in round 1 (${WARMUP_S} s after), `
      + `${DURATION_S} s at saturation (varying bodies), ${SAME_S} s at saturation (one repeated body), ${DURATION_S} s at ${RATE} req/s; then ${SSE_REQUESTS} streamed requests each (after ${SSE_WARMUP} warm-up), interleaved request by request${QUICK ? '; --quick' : ''}`);
    console.log(`load generator (autocannon with ${CONNECTIONS} connections at saturation; an open-loop paced sender at fixed rate; sequential streamed requests) runs in this process and shares the ${cores} cores with the servers under test, the fake upstream and anything else running on the machine`);
    console.log(`fake upstream ${upstream.url} (its own process): JSON completion at once; stream: ${SSE_CHUNKS} SSE events ${SSE_GAP_MS} ms apart, the first at once`);
    for (const server of servers) console.log(`  ${server.label.padEnd(24)} pid ${String(server.proc.pid).padEnd(7)} ${server.url}  ${server.describe}`);
    const plain = Array.from({ length: 2000 }, (_, i) => Buffer.byteLength(chatBody(latestTurn(i), false, TOOL_ROUNDS))).sort((x, y) => x - y);
    console.log(`bodies: OpenAI chat completion, client system prompt + user/assistant${TOOL_ROUNDS > 0 ? ` + ${TOOL_ROUNDS} rounds of tool calls and results (--tool-rounds)` : ''} + latest user turn, ${plain[0]}..${plain.at(-1)} bytes (median ${plain[1000]}); the latest turn is new on every request `
      + `(generated from parts, ${DISTINCT_TURNS.toLocaleString('en-US')} before the first repeat), questions and requests to act alternating; "same body" runs repeat one body (an agent loop resending its turn)`);
    console.log(`every request carries the same headers to every setup: content-type, authorization (a dummy key), x-portkey-provider, x-portkey-custom-host${SESSION_HEADER ? ', x-task-router-session (one of 64 sessions: task-router tracks them)' : '; no x-task-router-session (--no-sessions)'}`);
    console.log('server CPU = CPU time of the server process (all its threads, /proc/PID/task/*/schedstat) during the run / 2xx responses');
    console.log('');

    // Checks before timing.
    console.log('routing check (before timing; the fake upstream echoes the decision header, system prompt and latest turn it received):');
    for (const server of servers) {
      for (const index of [0, 1]) {
        const turn = latestTurn(index);
        const response = await post(server.url, chatBody(turn, false, TOOL_ROUNDS), index);
        let content = '?';
        try {
          content = (JSON.parse(response.text) as { choices?: { message?: { content?: string } }[] }).choices?.[0]?.message?.content ?? response.text.slice(0, 120);
        } catch {
          content = response.text.slice(0, 120);
        }
        const intact = content.includes(`turn="${turn.slice(0, 40)}"`);
        const mode = response.headers['x-task-router-mode'];
        console.log(`  ${server.label.padEnd(24)} ${index === 0 ? 'question' : 'request '} ${response.status} ${mode ? `mode=${String(mode).padEnd(6)} route=${String(response.headers['x-task-router-route']).padEnd(8)}` : 'no decision header     '} latest turn ${intact ? 'intact' : 'NOT SEEN'}; upstream saw ${content.slice(0, 110)}`);
      }
    }
    const c = byKey.get('c');
    if (c) {
      const counts = { question: new Map<string, number>(), request: new Map<string, number>() };
      const SAMPLE = 200;
      for (let i = 0; i < SAMPLE; i += 1) {
        const response = await post(c.url, chatBody(latestTurn(i), false, TOOL_ROUNDS), i);
        const map = i % 2 === 0 ? counts.question : counts.request;
        const mode = String(response.headers['x-task-router-mode'] ?? `status ${response.status}`);
        map.set(mode, (map.get(mode) ?? 0) + 1);
      }
      const show = (map: Map<string, number>) => [...map].map(([mode, count]) => `${mode} ${count}`).join(', ');
      console.log(`  (c) on the first ${SAMPLE} generated turns: questions → ${show(counts.question)}; requests to act → ${show(counts.request)}`);
    }
    await upstream.stats();
    console.log('');

    // Rounds.
    const runs: Run[] = [];
    const sse = new Map<Key, { round: number; times: number[]; failures: number }[]>(servers.map((server) => [server.key, []]));
    console.log(`runs (sat: saturation, varying bodies; same: saturation, one repeated body; rate: fixed rate; cpu% of one core, machine = ${cores * 100}):`);
    const header = ['round', 'setup', 'run', 'req/s', 'p50 ms', 'p99 ms', '2xx', 'non-2xx', 'errors', 'srv µs/req', 'srv cpu%', 'upstr cpu%', 'loadgen cpu%', 'other cpu%', 'upstream saw', 'distinct turns'];
    const widths = header.map((name, column) => Math.max(name.length, column === 1 ? 24 : 5));
    const line = (cells: readonly string[]) => `  ${cells.map((cell, column) => (column === 1 || column === 2 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')}`;
    console.log(line(header));
    for (let round = 1; round <= ROUNDS; round += 1) {
      const shift = (round - 1) % servers.length;
      const order = [...servers.slice(shift), ...servers.slice(0, shift)];
      for (const server of order) {
        await saturate(server.url, round === 1 ? FIRST_WARMUP_S : WARMUP_S, false, null);
        await quiesce(upstream);
        for (const kind of ['sat', 'same', 'rate'] as const) {
          const run = await measure(context, server, round, kind);
          runs.push(run);
          console.log(line([String(round), server.label, kind, fixed(run.reqPerSec, 0), fixed(run.p50, 2), fixed(run.p99, 2), String(run.ok), String(run.non2xx), String(run.errors),
            fixed(run.cpuUs, 0), fixed(run.serverPct, 0), fixed(run.upstreamPct, 0), fixed(run.loadgenPct, 0), fixed(run.otherPct, 0), String(run.upstream.requests), String(run.upstream.distinctTurns)]));
          await quiesce(upstream);
        }
      }
      // First SSE event, interleaved request by request; the order rotates with each request.
      const agents = new Map(servers.map((server) => [server.key, new http.Agent({ keepAlive: true, maxSockets: 1 })]));
      const times = new Map<Key, number[]>(servers.map((server) => [server.key, []]));
      const failures = new Map<Key, number>(servers.map((server) => [server.key, 0]));
      for (let i = 0; i < SSE_WARMUP + SSE_REQUESTS; i += 1) {
        const rotate = i % servers.length;
        for (const server of [...servers.slice(rotate), ...servers.slice(0, rotate)]) {
          const result = await streamOnce(server.url, agents.get(server.key)!, round * 100_000 + i);
          if (i < SSE_WARMUP) continue;
          if (!result.ok) failures.set(server.key, failures.get(server.key)! + 1);
          if (Number.isFinite(result.firstEventMs)) times.get(server.key)!.push(result.firstEventMs);
        }
      }
      for (const agent of agents.values()) agent.destroy();
      const streamed = await upstream.stats();
      for (const server of servers) sse.get(server.key)!.push({ round, times: times.get(server.key)!, failures: failures.get(server.key)! });
      console.log(`  round ${round} first SSE event medians (ms): ${servers.map((server) => `${server.key} ${fixed(median(times.get(server.key)!), 3)}`).join(', ')}; upstream saw ${streamed.streamed} streams`);
    }
    console.log('');

    // Summaries.
    const of = (key: Key, kind: Kind) => runs.filter((run) => run.key === key && run.kind === kind).sort((x, y) => x.round - y.round);
    const values = (key: Key, kind: Kind, pick: (run: Run) => number) => of(key, kind).map(pick);
    /** Per-round paired values of setup key against setup ref: difference or ratio; NaN where either is missing. */
    const paired = (key: Key, ref: Key, kind: Kind, pick: (run: Run) => number, how: 'diff' | 'ratio') => {
      const mine = of(key, kind);
      const theirs = new Map(of(ref, kind).map((run) => [run.round, run]));
      return mine.map((run) => {
        const other = theirs.get(run.round);
        if (!other) return Number.NaN;
        return how === 'diff' ? pick(run) - pick(other) : pick(run) / pick(other);
      });
    };
    const has = (...keys: Key[]) => keys.every((key) => byKey.has(key));
    /** A "vs" cell: blank against itself, n/a when the reference setup is not running. */
    const versus = (key: Key, ref: Key, shown: () => string) => (key === ref ? '-' : has(ref) ? shown() : 'n/a');
    const sseMedians = (key: Key) => (sse.get(key) ?? []).map((entry) => median(entry.times));
    const ssePaired = (key: Key, ref: Key) => {
      const mine = sseMedians(key);
      const theirs = sseMedians(ref);
      return mine.map((value, i) => value - (theirs[i] ?? Number.NaN));
    };
    const cpu = (run: Run) => run.cpuUs;
    const rps = (run: Run) => run.reqPerSec;
    const p50 = (run: Run) => run.p50;
    const p99 = (run: Run) => run.p99;
    const n = ROUNDS > 1 ? `median over ${ROUNDS} rounds (min..max)` : 'one round';

    const vsRow = (key: Key, kind: Kind) => [
      byKey.get(key)!.label,
      spread(values(key, kind, cpu), 0),
      versus(key, 'a', () => spread(paired(key, 'a', kind, cpu, 'diff'), 0, true)),
      spread(values(key, kind, rps), 0),
      versus(key, 'a', () => spread(paired(key, 'a', kind, rps, 'ratio'), 2)),
      versus(key, 'b', () => spread(paired(key, 'b', kind, rps, 'ratio'), 2)),
      spread(values(key, kind, p50), 2),
      spread(values(key, kind, p99), 2),
      String(of(key, kind).reduce((sum, run) => sum + run.non2xx + run.errors, 0)),
    ];
    const vsHeader = ['setup', 'srv µs/req', 'µs/req vs (a)', 'req/s', 'req/s vs (a)', 'req/s vs (b)', 'p50 ms', 'p99 ms', 'non-2xx+err'];
    console.log(`at saturation, ${CONNECTIONS} connections, varying bodies (${n}; "vs" columns are per-round paired differences or ratios):`);
    console.log(table([vsHeader, ...servers.map((server) => vsRow(server.key, 'sat'))], allColumnsButFirst(vsHeader.length)));
    console.log('');
    console.log(`at saturation, ${CONNECTIONS} connections, the same body on every request (an agent loop resending its turn; ${n}):`);
    console.log(table([vsHeader, ...servers.map((server) => vsRow(server.key, 'same'))], allColumnsButFirst(vsHeader.length)));
    console.log('');
    const rateHeader = ['setup', 'achieved req/s', 'srv µs/req', 'µs/req vs (a)', 'p50 ms', 'p99 ms', 'p99 vs (a) ms', 'non-2xx+err', 'rate/saturation'];
    console.log(`at a fixed rate of ${RATE} req/s, open loop, varying bodies (${n}):`);
    console.log(table([rateHeader, ...servers.map((server) => [
      server.label,
      spread(values(server.key, 'rate', rps), 0),
      spread(values(server.key, 'rate', cpu), 0),
      versus(server.key, 'a', () => spread(paired(server.key, 'a', 'rate', cpu, 'diff'), 0, true)),
      spread(values(server.key, 'rate', p50), 2),
      spread(values(server.key, 'rate', p99), 2),
      versus(server.key, 'a', () => spread(paired(server.key, 'a', 'rate', p99, 'diff'), 2, true)),
      String(of(server.key, 'rate').reduce((sum, run) => sum + run.non2xx + run.errors, 0)),
      fixed(RATE / median(values(server.key, 'sat', rps)), 2),
    ])], allColumnsButFirst(rateHeader.length)));
    const overloaded = servers.filter((server) => RATE / median(values(server.key, 'sat', rps)) > 0.8).map((server) => server.label);
    if (overloaded.length) console.log(`  note: ${RATE} req/s is not well below the saturation throughput of ${overloaded.join(', ')} in this run (rate/saturation > 0.8): their fixed-rate latencies include queueing`);
    console.log('');
    const sseHeader = ['setup', 'first event p50 ms', 'p90 ms', 'p50 vs (a) ms', 'failed streams'];
    console.log(`time to the first SSE data event, ${SSE_REQUESTS} sequential streamed requests per setup per round (${n} of the per-round medians; p90 over all requests):`);
    console.log(table([sseHeader, ...servers.map((server) => {
      const all = Float64Array.from((sse.get(server.key) ?? []).flatMap((entry) => entry.times)).sort();
      return [
        server.label,
        spread(sseMedians(server.key), 3),
        fixed(quantile(all, 0.9), 3),
        versus(server.key, 'a', () => spread(ssePaired(server.key, 'a'), 3, true)),
        String((sse.get(server.key) ?? []).reduce((sum, entry) => sum + entry.failures, 0)),
      ];
    })], allColumnsButFirst(sseHeader.length)));
    console.log('');

    // A/A.
    const aaRef = AA_OF;
    const aa = has('f', aaRef)
      ? {
        cpu: paired('f', aaRef, 'sat', cpu, 'diff'),
        cpuRate: paired('f', aaRef, 'rate', cpu, 'diff'),
        rps: paired('f', aaRef, 'sat', rps, 'ratio'),
        p99Rate: paired('f', aaRef, 'rate', p99, 'diff'),
        sse: ssePaired('f', aaRef),
      }
      : null;
    if (aa) {
      console.log(BASELINE === null
        ? `A/A noise floor: (f) is a second, identical instance of (${aaRef}), measured like the others; (f) - (${aaRef}), ${n}:`
        : `baseline: (f) is (c) run from ${BASELINE}; (f) - (c), the baseline's cost over this build's (not a noise floor), ${n}:`);
      console.log(`  server CPU ${spread(aa.cpu, 1, true)} µs/req at saturation, ${spread(aa.cpuRate, 1, true)} µs/req at ${RATE} req/s; throughput x${spread(aa.rps, 3)}; `
        + `p99 at ${RATE} req/s ${spread(aa.p99Rate, 2, true)} ms; first SSE event ${spread(aa.sse, 3, true)} ms`);
      console.log('');
    }
    const noise = (list: readonly number[] | undefined) => (list ? Math.max(...finite(list).map(Math.abs)) : Number.NaN);

    // Targets.
    const verdict = (pass: boolean) => (pass ? 'PASS' : 'MISS');
    const rows: string[][] = [['target', 'measured', 'limit', 'verdict', BASELINE === null ? `A/A noise (largest |f - ${aaRef}| of the rounds)` : 'largest |baseline (f) - (c)| of the rounds']];
    const target = (name: string, needs: Key[], measured: () => { value: number; shown: string; pass: boolean; limit: string; noise: string }) => {
      if (!has(...needs)) {
        rows.push([name, 'n/a', '', 'n/a', `needs ${needs.join(', ')}`]);
        return;
      }
      const result = measured();
      rows.push([name, result.shown, result.limit, Number.isFinite(result.value) ? verdict(result.pass) : 'n/a', result.noise]);
    };
    target('CPU (c) - (a), saturation', ['a', 'c'], () => {
      const value = median(paired('c', 'a', 'sat', cpu, 'diff'));
      return { value, shown: `${signed(value, 0)} µs/req`, pass: value <= TARGET.cpuOverheadUs, limit: `<= ${TARGET.cpuOverheadUs} µs`, noise: aa ? `${fixed(noise(aa.cpu), 1)} µs` : '' };
    });
    target(`CPU (c) - (a), ${RATE} req/s`, ['a', 'c'], () => {
      const value = median(paired('c', 'a', 'rate', cpu, 'diff'));
      return { value, shown: `${signed(value, 0)} µs/req`, pass: value <= TARGET.cpuOverheadUs, limit: `<= ${TARGET.cpuOverheadUs} µs`, noise: aa ? `${fixed(noise(aa.cpuRate), 1)} µs` : '' };
    });
    target('throughput (c) / (b)', ['b', 'c'], () => {
      const value = median(paired('c', 'b', 'sat', rps, 'ratio'));
      return { value, shown: `x${fixed(value, 3)}`, pass: value >= TARGET.throughputVsParse, limit: `>= x${TARGET.throughputVsParse}`, noise: aa ? `x${fixed(1 + noise(aa.rps.map((r) => r - 1)), 3)}` : '' };
    });
    target(`p99 (c) - (a), ${RATE} req/s`, ['a', 'c'], () => {
      const value = median(paired('c', 'a', 'rate', p99, 'diff'));
      return { value, shown: `${signed(value, 2)} ms`, pass: value <= TARGET.p99AddedMs, limit: `<= ${TARGET.p99AddedMs} ms`, noise: aa ? `${fixed(noise(aa.p99Rate), 2)} ms` : '' };
    });
    target('first SSE event (c) - (a)', ['a', 'c'], () => {
      const value = median(ssePaired('c', 'a'));
      return { value, shown: `${signed(value, 3)} ms`, pass: value <= TARGET.firstChunkAddedMs, limit: `<= ${TARGET.firstChunkAddedMs} ms`, noise: aa ? `${fixed(noise(aa.sse), 3)} ms` : '' };
    });
    target('CPU (c) below (e), saturation', ['c', 'e'], () => {
      const ce = paired('c', 'e', 'sat', cpu, 'diff');
      const value = median(ce);
      const ec = median(values('e', 'sat', cpu));
      return { value, shown: `${fixed(median(values('c', 'sat', cpu)), 0)} vs ${fixed(ec, 0)} µs/req (${signed(value, 0)})`, pass: value < 0, limit: '(c) < (e)', noise: aa ? `${fixed(noise(aa.cpu), 1)} µs` : '' };
    });
    console.log(`targets (median of the per-round paired differences or ratios):`);
    console.log(table(rows, new Set([1])));
    console.log('');

    // Machine load.
    const loadAfter = os.loadavg();
    const others = runs.map((run) => run.otherPct);
    const loadgen = runs.filter((run) => run.kind === 'sat').map((run) => run.loadgenPct);
    console.log('machine:');
    console.log(`  load average ${loadBefore.map((value) => value.toFixed(2)).join(' ')} at start, ${loadAfter.map((value) => value.toFixed(2)).join(' ')} at the end`);
    console.log(`  CPU used by other processes during the runs (% of one core, machine ${cores * 100}): median ${fixed(median(others), 0)}, max ${fixed(Math.max(...others), 0)}`);
    console.log(`  the load generator shares the ${cores} cores with the servers: it used ${fixed(median(loadgen), 0)}% of a core (median) at saturation; with the fake upstream and the server under test, saturation figures are bounded by ${cores} cores shared three ways, not by the server alone`);
    if (Math.max(...others) > NOISY_OTHER_CPU) console.log(`  note: other processes used up to ${fixed(Math.max(...others), 0)}% CPU during a run; the figures are noisy, rerun on a quiet machine and compare the ratios`);
    console.log('');

    // What reached the upstream, and what the gateway recorded.
    console.log('checks:');
    for (const server of servers) {
      const timed = runs.filter((run) => run.key === server.key);
      const clientOk = timed.reduce((sum, run) => sum + run.ok + run.non2xx, 0);
      const seen = timed.reduce((sum, run) => sum + run.upstream.requests, 0);
      const bad = timed.reduce((sum, run) => sum + run.upstream.badBodies, 0);
      const varied = timed.filter((run) => run.kind !== 'same');
      const distinct = varied.reduce((sum, run) => sum + run.upstream.distinctTurns, 0);
      const variedSeen = varied.reduce((sum, run) => sum + run.upstream.requests, 0);
      const sameDistinct = Math.max(0, ...timed.filter((run) => run.kind === 'same').map((run) => run.upstream.distinctTurns));
      const prompts = new Map<string, number>();
      for (const run of timed) for (const [prompt, count] of Object.entries(run.upstream.systemPrompts)) prompts.set(prompt, (prompts.get(prompt) ?? 0) + count);
      const shownPrompts = [...prompts].sort((x, y) => y[1] - x[1]).map(([prompt, count]) => `"${prompt.slice(0, 32)}" ${count}`).join(', ');
      console.log(`  ${server.label.padEnd(24)} timed runs: ${clientOk} answered; the upstream received ${seen} (${signed(seen - clientOk, 0)}: requests cut by the end of a run), ${bad} not a chat body; `
        + `distinct latest turns ${distinct} of ${variedSeen} in varying runs, ${sameDistinct} in same-body runs; system prompts: ${shownPrompts}`);
    }
    const scrape = new Map<Key, string>();
    for (const server of servers) if (server.logDir) scrape.set(server.key, await get(`${server.url}/metrics`).catch((error: Error) => `unavailable: ${error.message}`));

    await stopAll();
    stopped = true;
    let inGateway: FreshMicros = { all: [], streamed: [] };
    let inBaseline: FreshMicros = { all: [], streamed: [] };
    for (const server of servers) {
      if (!server.logDir) continue;
      const metrics = scrape.get(server.key) ?? '';
      const sum = (name: string) => metrics.split('\n').filter((row) => row.startsWith(`${name}{`) || row.startsWith(`${name} `)).reduce((total, row) => total + Number(row.slice(row.lastIndexOf(' ') + 1)), 0);
      const count = async (folder: string) => {
        const dir = join(server.logDir!, folder);
        if (!existsSync(dir)) return { files: 0, lines: 0, bytes: 0 };
        let lines = 0;
        let bytes = 0;
        const files = await readdir(dir);
        for (const file of files) {
          const text = await readFile(join(dir, file), 'utf8');
          bytes += Buffer.byteLength(text);
          lines += text.split('\n').filter(Boolean).length;
        }
        return { files: files.length, lines, bytes };
      };
      const decisions = await count('decisions');
      const memory = await count('memory');
      console.log(`  ${server.label.padEnd(24)} /metrics: task_router_decisions_total ${sum('task_router_decisions_total')}, task_router_log_dropped_total ${sum('task_router_log_dropped_total')}; `
        + `decision log ${decisions.lines} lines (${fixed(decisions.bytes / 1048576, 1)} MiB), memory log ${memory.lines} lines (${fixed(memory.bytes / 1048576, 1)} MiB), after its shutdown`);
      if (server.key === 'c') inGateway = await freshClassifyMicros(join(server.logDir, 'decisions'));
      if (server.key === 'f' && BASELINE !== null) inBaseline = await freshClassifyMicros(join(server.logDir, 'decisions'));
    }
    if (inGateway.all.length > 0) {
      const inside = median(inGateway.all);
      const loop = loopClassifyMicros();
      const ratio = inside / median(loop);
      console.log('');
      console.log(`classification of the latest turn: inside (c) median ${fixed(inside, 1)} µs (p90 ${fixed(quantile(inGateway.all, 0.9), 1)}) over ${inGateway.all.length} texts classified for the first time (the decision records' micros); `
        + `the same kind of turn in a loop in this process, after the servers stopped: median ${fixed(median(loop), 1)} µs over ${loop.length}; x${fixed(ratio, 2)} (target <= x${TARGET.classifyVsLoop}: ${verdict(ratio <= TARGET.classifyVsLoop)})`);
      // What the first-event phase pays: one request at a time, the classifier's tables cold between them.
      const { streamed } = inGateway;
      if (streamed.length > 0) console.log(`  of them the streamed requests, sent one at a time to an idle gateway: median ${fixed(median(streamed), 1)} µs (p90 ${fixed(quantile(streamed, 0.9), 1)}) over ${streamed.length}`);
      if (inBaseline.all.length > 0) console.log(`  inside (f), the baseline build: median ${fixed(median(inBaseline.all), 1)} µs (p90 ${fixed(quantile(inBaseline.all, 0.9), 1)}) over ${inBaseline.all.length}`);
    }
    if (PROFILE) {
      const profiles = (await readdir(PROFILE_DIR).catch(() => [] as string[])).filter((file) => file.endsWith('.cpuprofile') && file.includes(String(byKey.get('c')?.proc.pid)));
      console.log(`  cpu profile of (c), its whole life (its figures include the profiler's overhead): ${profiles.length ? profiles.map((file) => join(PROFILE_DIR, file)).join(', ') : `none found in ${PROFILE_DIR}`}`);
    }
    if (KEEP_LOGS) console.log(`  logs kept in ${tmp}`);
    console.log('');
    console.log(`done in ${fixed((performance.now() - startedAt) / 1000, 0)} s`);
  } finally {
    if (!stopped) await stopAll();
    if (!KEEP_LOGS) await rm(tmp, { recursive: true, force: true });
  }
}

/** Stops every child; set once they exist, so a signal can stop them too. */
let cleanup: () => Promise<void> = async () => {};
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\n${signal}: stopping the servers and the fake upstream\n`);
    const force = setTimeout(() => process.exit(130), EXIT_TIMEOUT_MS + 2_000);
    void cleanup().finally(() => {
      clearTimeout(force);
      process.exit(130);
    });
  });
}

main().catch(async (error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  await cleanup().catch(() => {});
  process.exit(1);
});
