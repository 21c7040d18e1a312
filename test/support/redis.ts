/**
 * A real redis-server for tests: on 127.0.0.1, a free port, no persistence, in a scratch folder of its
 * own. It can be stopped, killed, paused (SIGSTOP: a Redis that is up but does not answer) and started
 * again on the same port. Missing redis-server fails the test that needs it, saying how to install it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listenOnLoopback } from './listening.js';

const READY_TIMEOUT_MS = 10_000;
const EXIT_TIMEOUT_MS = 10_000;

export interface TestRedis {
  readonly port: number;
  readonly url: string;
  /** Whether the server process is running (paused counts as running). */
  running(): boolean;
  /** Starts it again on the same port, empty (nothing is saved). */
  start(): Promise<void>;
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
  /** SIGKILL, and waits for the exit: a crash. */
  kill(): Promise<void>;
  /** SIGSTOP: connections stay open and nothing answers. */
  pause(): void;
  resume(): void;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

/** Throws, with how to install it, when redis-server is not on the PATH. */
export function requireRedisServer(): void {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error('redis-server is not installed, and these tests need a real one: install the Debian package redis-server (apt-get install -y redis-server), or put redis-server on the PATH');
  }
}

/** A port nothing listens on now: bound to 0 by the system, then released. */
export async function freePort(): Promise<number> {
  const { port, close } = await listenOnLoopback(net.createServer());
  await close();
  return port;
}

/** Sends PING until the server answers +PONG, or throws after `timeoutMs`. */
async function untilAnswering(port: number, timeoutMs: number, exited: () => string | null): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answered = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let reply = '';
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(500, () => done(false));
      socket.on('error', () => done(false));
      socket.on('data', (chunk) => {
        reply += chunk.toString();
        if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
      });
      socket.on('connect', () => socket.write('PING\r\n'));
    });
    if (answered) return;
    const why = exited();
    if (why !== null) throw new Error(`redis-server on port ${port} exited before answering: ${why}`);
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startRedis(): Promise<TestRedis> {
  requireRedisServer();
  const dir = await mkdtemp(join(tmpdir(), 'task-router-redis-'));
  const port = await freePort();
  let child: ChildProcess | null = null;
  let output = '';

  const launch = async () => {
    output = '';
    const started = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
    started.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
    await untilAnswering(port, READY_TIMEOUT_MS, () => (started.exitCode !== null || started.signalCode !== null ? output.trim().split('\n').slice(-3).join(' | ') : null));
  };

  const ended = async (signal: NodeJS.Signals) => {
    const running = child;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    if (signal !== 'SIGCONT') running.kill('SIGCONT');
    running.kill(signal);
    const timer = setTimeout(() => running.kill('SIGKILL'), EXIT_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    running: () => child !== null && child.exitCode === null && child.signalCode === null,
    start: launch,
    stop: () => ended('SIGTERM'),
    kill: () => ended('SIGKILL'),
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
    close: async () => {
      await ended('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
