/**
 * `task-router serve` as a real process (the compiled CLI in dist/): started on a test config, its
 * JSON log lines collected, stopped by the test. Every process started here is killed by killAll().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { ensureBuilt } from './built.js';

/** A serve process on a machine as busy as a 2-core CI runner with other tests: starting takes seconds. */
const START_TIMEOUT_MS = 60_000;

export interface LogLine {
  readonly msg: string;
  readonly [field: string]: unknown;
}

export interface ServeProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Every JSON line written so far (stdout and stderr; anything else is kept as { msg: line }). */
  lines(): LogLine[];
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  signal(signal: NodeJS.Signals): void;
}

const children = new Set<ChildProcess>();

/** Starts `serve --config file` with `args` and `env` on top of this process's environment; resolves once it logs "task-router listening". */
export async function serve(file: string, env: NodeJS.ProcessEnv = {}, args: readonly string[] = []): Promise<ServeProcess> {
  const cli = ensureBuilt('cli/main.js');
  const child = spawn(process.execPath, [cli, 'serve', '--config', file, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'info', ...env } });
  children.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => {
    children.delete(child);
    resolve(code);
  }));
  const lines = () => output.split('\n').filter((line) => line.trim() !== '').map((line): LogLine => {
    try {
      return JSON.parse(line) as LogLine;
    } catch {
      return { msg: line };
    }
  });
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const listening = lines().find((line) => line.msg === 'task-router listening');
    if (listening && typeof listening.url === 'string') {
      return { url: listening.url, child, lines, output: () => output, exited, signal: (signal) => void child.kill(signal) };
    }
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`task-router serve did not start within ${START_TIMEOUT_MS} ms:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGKILLs every serve process still running, workers of a cluster primary included (by their pids in its log). */
export async function killAll(): Promise<void> {
  const waits: Promise<unknown>[] = [];
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    waits.push(new Promise((resolve) => child.once('close', resolve)));
    child.kill('SIGKILL');
  }
  await Promise.all(waits);
}

/** Kills the workers a primary logged (by pid), for after the primary itself is gone. */
export function killWorkers(lines: readonly LogLine[]): void {
  for (const line of lines) {
    if (line.msg !== 'worker listening' || typeof line.pid !== 'number') continue;
    try {
      process.kill(line.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

export interface Answer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/**
 * One request on a connection of its own (no keep-alive): with cluster workers, each connection may
 * land on another worker, so a test can reach them all.
 */
export function request(url: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method: options.method ?? 'GET', agent: false, headers: { connection: 'close', ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.setTimeout(options.timeoutMs ?? 15_000, () => req.destroy(new Error(`no answer to ${path} within ${options.timeoutMs ?? 15_000} ms`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Polls `probe` until `ok`, up to `timeoutMs`; throws with the last value. */
export async function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let value: T | undefined;
    let failure: unknown;
    try {
      value = await probe();
      if (ok(value)) return value;
    } catch (error) {
      failure = error;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not so after ${timeoutMs} ms (last: ${failure ? String(failure) : JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
