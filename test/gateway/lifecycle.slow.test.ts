/**
 * Shutdown, timed: what is left in flight after server.shutdownGraceMs is cut at the grace, in process
 * and on SIGTERM to `task-router serve`, and counted and logged as a shutdown cut, not as an upstream
 * fault. (The probes and the drains that finish in time are in lifecycle.test.ts.)
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { writeTestConfig } from '../support/config-file.js';
import type { FakeUpstream } from '../support/fake-upstream.js';
import { capturedLog, parseSamples, scrape, total } from '../support/running.js';
import { scratchAndUpstream } from '../support/suite.js';
import { serveCli, slowStream, startStream } from './lifecycle-support.js';

let dir: string;
let upstream: FakeUpstream;
let gateway: RunningGateway | null = null;
let child: ChildProcess | null = null;

scratchAndUpstream('lifecycle-slow', (made) => ({ dir, upstream } = made));
afterEach(async () => {
  await gateway?.close();
  gateway = null;
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = null;
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
