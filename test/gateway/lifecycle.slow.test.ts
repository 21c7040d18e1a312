/**
 * Shutdown, timed: what is left in flight after server.shutdownGraceMs is cut at the grace, in process
 * and on SIGTERM to `task-router serve`, and counted and logged as a shutdown cut, not as an upstream
 * fault. (The probes and the drains that finish in time are in lifecycle.test.ts.)
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { writeTestConfig } from '../support/config-file.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { capturedLog, parseSamples, scrape, total } from '../support/running.js';
import { stalledFiles } from '../support/stalled-file.js';
import { scratchAndUpstream } from '../support/suite.js';
import { serveCli, slowStream, startStream } from './lifecycle-support.js';

let dir: string;
let upstream: FakeUpstream;
let gateway: RunningGateway | null = null;
let child: ChildProcess | null = null;
const stalled = stalledFiles();

scratchAndUpstream('lifecycle-slow', (made) => ({ dir, upstream } = made));
afterEach(async () => {
  // First, so that no close below waits for a write blocked on a pipe.
  stalled.release();
  await gateway?.close();
  gateway = null;
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = null;
  await stalled.close();
});

/**
 * A log folder whose day files (today's and tomorrow's, in UTC, the default logging.utcOffset) are
 * pipes nothing reads: every decision and memory line written to it hangs, as on a stalled mount.
 */
async function hungLogDir(name: string): Promise<string> {
  const logs = join(dir, name);
  const days = [0, 1].map((ahead) => new Date(Date.now() + ahead * 86_400_000).toISOString().slice(0, 10));
  for (const [folder, extension] of [['decisions', 'jsonl'], ['memory', 'md']] as const) {
    await mkdir(join(logs, folder), { recursive: true });
    for (const day of days) stalled.make(join(logs, folder, `${day}.${extension}`));
  }
  return logs;
}

const ACTION_BODY = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'fix the failing test in src/app.ts' }] });
/** A chat request, answered; its decision and memory lines are queued and, a flush interval later, written. */
async function routedRequest(url: string): Promise<void> {
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ACTION_BODY });
  expect(res.status).toBe(200);
  await res.text();
  // logging.flushMs is 250 by default: by now the write has begun, and hangs.
  await new Promise((resolve) => setTimeout(resolve, 600));
}

const within = <T>(promise: Promise<T>, ms: number) => Promise.race([promise.then(() => 'done' as const), new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), ms))]);

describe('a log write that never completes', () => {
  it('the drain still ends: the logs get what is left of the grace (at least a second), what was not written is dropped and counted', async () => {
    const { log, lines } = capturedLog();
    const logs = await hungLogDir('hung-in-process');
    gateway = await startGateway({ configFile: await config({ server: { shutdownGraceMs: 300 }, logging: { decisions: true, memory: true, dir: logs } }), log });
    await routedRequest(gateway.url);
    const started = performance.now();
    // Grace 300 ms, then at least 1 s for the logs: far under 15 s however busy the machine.
    expect(await within(gateway.drain(), 15_000)).toBe('done');
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
    const logged = lines.map((line) => JSON.parse(line) as { msg: string; log?: string; lines?: number; err?: string });
    const drops = logged.filter((line) => line.msg === 'log lines dropped');
    expect(drops.map((line) => [line.log, line.lines])).toEqual(expect.arrayContaining([['decisions', 1], ['memory', 1]]));
    expect(drops[0]?.err).toMatch(/not written within \d+ ms of closing: the disk or mount holding logging\.dir is not answering/);
    const after = parseSamples(await gateway.metricsText());
    expect(total(after, 'task_router_log_dropped_total', { log: 'decisions', reason: 'write_failed' })).toBe(1);
    expect(total(after, 'task_router_log_dropped_total', { log: 'memory', reason: 'write_failed' })).toBe(1);
    gateway = null;
  });

  it('SIGTERM on `task-router serve`: it stops after the grace and the log wait, saying what it dropped', async () => {
    const logs = await hungLogDir('hung-cli');
    const running = await serveCli(await config({ server: { shutdownGraceMs: 300 }, logging: { decisions: true, memory: true } }), logs, (spawned) => {
      child = spawned;
    });
    await routedRequest(running.url);
    child?.kill('SIGTERM');
    const stopped = (async () => {
      while (!running.output().includes('task-router stopped')) await new Promise((resolve) => setTimeout(resolve, 50));
    })();
    expect(await within(stopped, 15_000)).toBe('done');
    expect(running.output()).toMatch(/log lines dropped/);
    // A write blocked in the thread pool would keep any process from exiting (process.exit included);
    // released, the process exits 0 by itself.
    stalled.release();
    expect(await running.exited).toBe(0);
  }, 60_000);
});

let configs = 0;
const config = (changes: Record<string, Record<string, unknown>> = {}) => {
  configs += 1;
  return writeTestConfig(dir, `lifecycle-${configs}.yaml`, { upstream: { url: upstream.url }, logging: { decisions: false, memory: false }, ...changes });
};

describe('draining (in process)', () => {
  it('cuts what is left after the grace, counted and logged as a shutdown cut, not an upstream fault', async () => {
    const { log, lines } = capturedLog();
    gateway = await startGateway({ configFile: await config({ server: { shutdownGraceMs: 300 } }), log });
    const before = await scrape(gateway.url);
    expect(total(before, 'task_router_shutdown_cuts_total', { kind: 'stream' })).toBe(0);
    upstream.respond(slowStream(10, 1000));
    const stream = await startStream(gateway.url);
    const started = performance.now();
    await gateway.drain();
    expect(performance.now() - started).toBeLessThan(3000);
    const ended = await stream.done;
    expect(ended.complete).toBe(false);
    const logged = lines.map((line) => JSON.parse(line) as { msg: string; kind?: string; requestId?: string });
    const cuts = logged.filter((line) => line.msg.startsWith('shutdown cut'));
    expect(cuts).toHaveLength(1);
    expect(cuts[0]).toMatchObject({ kind: 'stream' });
    expect(cuts[0]?.requestId).toMatch(/\S/);
    expect(logged.some((line) => line.msg === 'upstream failed')).toBe(false);
    const after = parseSamples(await gateway.metricsText());
    expect(total(after, 'task_router_shutdown_cuts_total', { kind: 'stream' })).toBe(1);
    expect(total(after, 'task_router_shutdown_cuts_total', { kind: 'request' })).toBe(0);
    expect(total(after, 'task_router_upstream_errors_total')).toBe(0);
    gateway = null;
  });
});

describe('SIGTERM on `task-router serve`', () => {
  const serve = async (graceMs: number) =>
    serveCli(await config({ server: { shutdownGraceMs: graceMs } }), join(dir, 'logs'), (spawned) => {
      child = spawned;
    });

  it('a stream longer than the grace is cut at the grace and logged as a shutdown cut', async () => {
    const running = await serve(400);
    upstream.respond(slowStream(10, 1000));
    const stream = await startStream(running.url);
    const started = performance.now();
    child?.kill('SIGTERM');
    const ended = await stream.done;
    expect(ended.complete).toBe(false);
    expect(await running.exited).toBe(0);
    expect(performance.now() - started).toBeLessThan(5000);
    const lines = running.output().trim().split('\n').map((line) => JSON.parse(line) as { msg: string; kind?: string });
    expect(lines.filter((line) => line.msg.startsWith('shutdown cut'))).toEqual([expect.objectContaining({ kind: 'stream' })]);
    expect(lines.filter((line) => line.msg === 'upstream failed')).toEqual([]);
  });
});
