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

const ADMIN = 'cluster-lifecycle-admin-token';

const start = async (name: string, graceMs = 10_000, env: NodeJS.ProcessEnv = {}) => {
  const file = await writeTestConfig(dir, name, { upstream: { url: upstream.url }, logging: { decisions: false, memory: false }, server: { shutdownGraceMs: graceMs } });
  primary = await serve(file, { LOG_DIR: join(dir, 'logs'), ...env }, ['--workers', '2']);
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

  // A replacement used to read the file as it was then: an upstream.url edited since the start, which a
  // reload had only reported as needing a restart, was served by the replacement alone, so the machine
  // sent requests to two upstreams at once.
  it('a replacement serves the configuration the other workers serve: settings a reload said need a restart wait for one', async () => {
    const second = await startFakeUpstream(apiReply('second upstream'));
    try {
      const { file, running } = await start('replacement-settings.yaml', 10_000, { ADMIN_TOKEN: ADMIN });
      const text = await readFile(file, 'utf8');
      expect(text).toContain(upstream.url);
      expect(text).toMatch(/strategy: replace/);
      // upstream.url needs a restart; routing.strategy is applied by a reload.
      await writeFile(file, text.replace(upstream.url, second.url).replace(/strategy: replace/, 'strategy: prepend'));
      running.signal('SIGHUP');
      const reloads = await until('both workers reloaded', async () => running.lines().filter((line) => line.msg === 'config reloaded'), (found) => found.length >= 2, 30_000);
      expect(reloads.map((line) => line.restartRequired)).toEqual([['upstream'], ['upstream']]);
      const { configHash } = reloads[0] as { configHash?: string };
      expect(reloads[1]?.configHash).toBe(configHash);

      const [firstPid, secondPid] = workerPids(running) as [number, number];
      const replacements = () => running.lines().filter((line) => line.msg === 'replacement worker listening').map((line) => line.worker);
      process.kill(firstPid, 'SIGKILL');
      await until('the replacement listening', async () => replacements().length, (count) => count === 1, 30_000);
      const [replacement] = replacements();
      // Fresh connections until both workers, the replacement among them, have answered.
      const states = new Map<unknown, { configHash: string; strategy: string }>();
      await until('both workers answering', async () => {
        const answer = await request(running.url, '/admin/state', { headers: { authorization: `Bearer ${ADMIN}` } });
        const state = JSON.parse(answer.body) as { configHash: string; strategy: string; shared: { worker: number } };
        states.set(state.shared.worker, { configHash: state.configHash, strategy: state.strategy });
        return states;
      }, (seen) => seen.size === 2 && seen.has(replacement), 30_000);
      expect([...states.values()]).toEqual([{ configHash, strategy: 'prepend' }, { configHash, strategy: 'prepend' }]);
      expect(running.lines().find((line) => line.msg.startsWith('the configuration file changed settings that need a restart'))).toMatchObject({ worker: replacement, restartRequired: ['upstream'] });

      // With the other worker replaced too, every request is served by a replacement: all still go to
      // the upstream the cluster started with.
      process.kill(secondPid, 'SIGKILL');
      await until('the second replacement listening', async () => replacements().length, (count) => count === 2, 30_000);
      const first = upstream.requests.length;
      const answers = await Promise.all(Array.from({ length: 30 }, () => request(running.url, '/v1/chat/completions', { method: 'POST', body: chatBody })));
      expect(answers.map((answer) => answer.status)).toEqual(Array(30).fill(200));
      expect(upstream.requests.length - first).toBe(30);
      expect(second.requests.length).toBe(0);
    } finally {
      await second.close();
    }
  }, 120_000);

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
