/**
 * A cluster's workers coming and going at awkward moments, on `task-router serve --workers 2`: a
 * replacement that cannot start exits and is tried again; SIGTERM while a replacement starts still
 * ends the primary within the grace; a primary that disappears leaves its workers to drain.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeTestConfig } from '../support/config-file.js';
import { apiReply, delayThen, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { parseSamples, total } from '../support/running.js';
import { killAll, killWorkers, request, serve, until, type ServeProcess } from '../support/serve.js';

const chatBody = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'fix the failing tests in src/app.ts' }] });

let dir: string;
let upstream: FakeUpstream;
let primary: ServeProcess | null = null;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-cluster-lifecycle-'));
  upstream = await startFakeUpstream(apiReply('ok'));
});

afterEach(async () => {
  const lines = primary?.lines() ?? [];
  await killAll();
  killWorkers(lines);
  primary = null;
  upstream.respond(apiReply('ok'));
});

afterAll(async () => {
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const start = async (name: string, graceMs = 10_000) => {
  const file = await writeTestConfig(dir, name, { upstream: { url: upstream.url }, logging: { decisions: false, memory: false }, server: { shutdownGraceMs: graceMs } });
  primary = await serve(file, { LOG_DIR: join(dir, 'logs') }, ['--workers', '2']);
  return { file, running: primary };
};

const workerPids = (running: ServeProcess) => running.lines().filter((line) => line.msg === 'worker listening').map((line) => line.pid as number);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a cluster of two workers, at awkward moments', () => {
  it('a replacement that cannot read its configuration exits and is tried again; once the file is valid, the cluster is whole', async () => {
    const { file, running } = await start('invalid-replacement.yaml');
    const valid = await readFile(file, 'utf8');
    await writeFile(file, `${valid}\nserver: [not valid\n`);
    process.kill(workerPids(running)[0] as number, 'SIGKILL');
    // Each failed replacement exits, so the primary sees it and tries again, pausing longer each time.
    await until('two failed replacements', async () => running.lines().filter((line) => line.msg === 'worker exited unexpectedly: starting a replacement').length, (count) => count >= 3, 30_000);
    await writeFile(file, valid);
    const samples = await until('the cluster whole again', async () => parseSamples((await request(running.url, '/metrics')).body), (found) => total(found, 'task_router_workers') === 2, 30_000);
    expect(total(samples, 'task_router_worker_restarts_total')).toBeGreaterThanOrEqual(3);
  }, 90_000);

  it('SIGTERM while a replacement is starting: the primary exits 0 well within the grace', async () => {
    const { running } = await start('term-while-replacing.yaml', 15_000);
    process.kill(workerPids(running)[0] as number, 'SIGKILL');
    await until('a replacement forked', async () => running.lines().some((line) => line.msg === 'worker exited unexpectedly: starting a replacement'), (seen) => seen, 15_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = performance.now();
    running.signal('SIGTERM');
    expect(await running.exited).toBe(0);
    // Before, the replacement missed the drain and was killed after the grace and its margin (25 s).
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(running.lines().some((line) => line.msg === 'worker did not exit after the drain: killed')).toBe(false);
  }, 60_000);

  it('the primary gone: a request in flight on a worker still gets its answer, then the workers exit', async () => {
    const { running } = await start('primary-gone.yaml');
    const pids = workerPids(running);
    upstream.respond(delayThen(1_500, apiReply('late but whole')));
    const answer = request(running.url, '/v1/chat/completions', { method: 'POST', body: chatBody, timeoutMs: 10_000 });
    await upstream.waitForRequests(1, 5_000);
    running.signal('SIGKILL');
    const answered = await answer;
    expect(answered.status).toBe(200);
    expect(answered.body).toContain('late but whole');
    await until('every worker gone', async () => pids.filter(alive), (left) => left.length === 0, 20_000);
  }, 60_000);
});
