/**
 * `task-router serve --workers 2` as a real process: a primary and two workers sharing the port. One
 * /metrics aggregates both (its counts are the requests sent; promtool accepts it); an admin flip, a
 * config file change and SIGHUP reach both workers; a killed worker is replaced and counted, and no
 * connection made while it dies is left waiting; SIGTERM lets a stream in flight finish and exits 0.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestConfig } from '../support/config-file.js';
import { apiReply, pieces, replySse, sseEvents, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { parseSamples, total } from '../support/running.js';
import { killAll, killWorkers, request, serve, until, type ServeProcess } from '../support/serve.js';

const ADMIN = 'cluster-admin-token';
const auth = { authorization: `Bearer ${ADMIN}` };
const chatBody = (content: string, stream = false) => JSON.stringify({ model: 'm', ...(stream ? { stream: true } : {}), messages: [{ role: 'user', content }] });

let dir: string;
let upstream: FakeUpstream;
let file: string;
let primary: ServeProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-cluster-'));
  upstream = await startFakeUpstream(apiReply('ok'));
  file = await writeTestConfig(dir, 'cluster.yaml', {
    upstream: { url: upstream.url },
    logging: { decisions: false, memory: false },
    reload: { watch: true, debounceMs: 50 },
    server: { shutdownGraceMs: 10_000 },
  });
  primary = await serve(file, { ADMIN_TOKEN: ADMIN, LOG_DIR: join(dir, 'logs') }, ['--workers', '2']);
}, 120_000);

afterAll(async () => {
  const lines = primary?.lines() ?? [];
  await killAll();
  killWorkers(lines);
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const metrics = async () => {
  const answer = await request(primary.url, '/metrics');
  expect(answer.status).toBe(200);
  return answer.body;
};

/** The worker ids answering /admin/state over `tries` fresh connections. */
async function workersSeen(tries: number): Promise<Set<number>> {
  const seen = new Set<number>();
  for (let index = 0; index < tries && seen.size < 2; index += 1) {
    const state = JSON.parse((await request(primary.url, '/admin/state', { headers: auth })).body) as { shared: { worker: number } };
    seen.add(state.shared.worker);
  }
  return seen;
}

describe('a cluster of two workers', () => {
  it('serves on both workers, and one /metrics counts exactly the requests sent, across both', async () => {
    expect((await workersSeen(40)).size).toBe(2);
    const before = upstream.requests.length;
    const sent = 40;
    const answers = await Promise.all(Array.from({ length: sent }, (_, index) => request(primary.url, '/v1/chat/completions', { method: 'POST', body: chatBody(index % 2 ? 'fix the failing tests in src/app.ts' : 'what is a race condition?') })));
    expect(answers.map((answer) => answer.status)).toEqual(Array(sent).fill(200));
    expect(upstream.requests.length - before).toBe(sent);

    const text = await metrics();
    const samples = parseSamples(text);
    expect(total(samples, 'task_router_decisions_total')).toBe(sent);
    expect(total(samples, 'task_router_upstream_responses_total', { status_class: '2xx' })).toBe(sent);
    expect(total(samples, 'task_router_request_duration_seconds_count', { format: 'openai-chat' })).toBe(sent);
    expect(total(samples, 'task_router_workers')).toBe(2);
    expect(total(samples, 'task_router_worker_restarts_total')).toBe(0);
    // One family each: the exposition is one registry's, not two concatenated.
    expect(text.match(/^# TYPE task_router_decisions_total /gm)).toHaveLength(1);
    const checked = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    if (checked.error) throw new Error('promtool is not installed: install the Debian package prometheus (see .ci/run)');
    expect(`${checked.stdout}${checked.stderr}`).toBe('');
    expect(checked.status).toBe(0);
  });

  it('an admin flip on one worker reaches both', async () => {
    const flip = await request(primary.url, '/admin/flags', { method: 'POST', headers: auth, body: '{"hardRouting": false}' });
    expect(flip.status).toBe(200);
    await until('both workers in soft routing', async () => {
      const routings = await Promise.all(Array.from({ length: 10 }, () => request(primary.url, '/v1/chat/completions', { method: 'POST', body: chatBody('fix the failing tests in src/app.ts') })));
      return routings.map((answer) => answer.headers['x-task-router-routing']);
    }, (routings) => routings.every((routing) => routing === 'soft'));
    expect(total(parseSamples(await metrics()), 'task_router_hard_routing_enabled')).toBe(0);
    expect((await request(primary.url, '/admin/flags', { method: 'POST', headers: auth, body: '{"hardRouting": true}' })).status).toBe(200);
    await until('the aggregated flag back at 1', async () => total(parseSamples(await metrics()), 'task_router_hard_routing_enabled'), (value) => value === 1);
  });

  it('a config file change and SIGHUP reach both workers', async () => {
    const reloads = (trigger: string) => primary.lines().filter((line) => line.msg === 'config reloaded' && line.trigger === trigger).length;
    await writeFile(file, (await readFile(file, 'utf8')).replace(/strategy: replace/, 'strategy: prepend'));
    await until('both workers reloaded the changed file', async () => reloads('watch'), (count) => count >= 2);
    const workersReloaded = new Set(primary.lines().filter((line) => line.msg === 'config reloaded' && line.trigger === 'watch').map((line) => line.worker));
    expect(workersReloaded.size).toBe(2);

    const hups = reloads('SIGHUP');
    primary.signal('SIGHUP');
    await until('both workers reloaded on SIGHUP', async () => reloads('SIGHUP'), (count) => count >= hups + 2);
  });

  it('a worker killed is replaced, and counted on the primary', async () => {
    // The flag the workers hold comes from a file change made after an admin flip: the replacement must
    // start with it, not with the flip's.
    const routings = async () => (await Promise.all(Array.from({ length: 10 }, () => request(primary.url, '/v1/chat/completions', { method: 'POST', body: chatBody('fix the failing tests in src/app.ts') })))).map((answer) => answer.headers['x-task-router-routing']);
    expect((await request(primary.url, '/admin/flags', { method: 'POST', headers: auth, body: '{"hardRouting": false}' })).status).toBe(200);
    await until('both workers in soft routing', routings, (seen) => seen.every((routing) => routing === 'soft'));
    const setHard = async (hard: boolean) => writeFile(file, (await readFile(file, 'utf8')).replace(/hard: (true|false)/, `hard: ${hard}`));
    const reloaded = () => primary.lines().filter((line) => line.msg === 'config reloaded').length;
    const reloads = reloaded();
    await setHard(false);
    await until('both workers reloaded the file', async () => reloaded(), (count) => count >= reloads + 2);
    await setHard(true);
    await until('both workers in hard routing, from the file', routings, (seen) => seen.every((routing) => routing === 'hard'));
    // Counts reported before a worker dies stay in the sums: a sum that went down would read as a reset.
    const before = parseSamples(await metrics());
    const pids = primary.lines().filter((line) => line.msg === 'worker listening').map((line) => line.pid as number);
    const victim = pids[0] as number;
    process.kill(victim, 'SIGKILL');
    // Connections that arrive while the worker dies: each is answered by the other worker or reset by
    // the dying one, never left waiting (as it is when the primary passes it to the dead worker).
    const burst = await Promise.allSettled(Array.from({ length: 20 }, () => request(primary.url, '/healthz', { timeoutMs: 5_000 })));
    const outcomes = burst.map((settled) => (settled.status === 'fulfilled' ? settled.value.status : String(settled.reason)));
    expect(outcomes.filter((outcome) => String(outcome).includes('no answer'))).toEqual([]);
    expect(outcomes).toContain(200);
    const samples = await until('a replacement worker', async () => parseSamples(await metrics()), (found) => total(found, 'task_router_worker_restarts_total') === 1 && total(found, 'task_router_workers') === 2, 60_000);
    expect(total(samples, 'task_router_worker_restarts_total')).toBe(1);
    for (const name of ['task_router_decisions_total', 'task_router_upstream_responses_total', 'task_router_request_duration_seconds_count']) {
      expect(total(samples, name)).toBeGreaterThanOrEqual(total(before, name));
    }
    expect(primary.lines().some((line) => line.msg === 'worker exited unexpectedly: starting a replacement' && line.signal === 'SIGKILL')).toBe(true);
    // The replacement serves, with the flag the others have.
    expect((await workersSeen(40)).size).toBe(2);
    const answers = await Promise.all(Array.from({ length: 6 }, () => request(primary.url, '/v1/chat/completions', { method: 'POST', body: chatBody('fix the failing tests in src/app.ts') })));
    expect(answers.map((answer) => [answer.status, answer.headers['x-task-router-routing']])).toEqual(Array(6).fill([200, 'hard']));
    // Longer than the 60 s the replacement is given, so a slow one fails on that wait, which says what it waited for.
  }, 90_000);

  it('SIGTERM drains every worker: a stream in flight finishes, then the primary exits 0', async () => {
    upstream.respond(replySse(sseEvents('openai-chat', pieces('one two three four five six', 6).join(' ')), { delayMs: 200 }));
    const before = upstream.requests.length;
    const stream = request(primary.url, '/v1/chat/completions', { method: 'POST', body: chatBody('what is a race condition?', true), timeoutMs: 30_000 });
    await upstream.waitForRequests(before + 1, 15_000);
    primary.signal('SIGTERM');
    const answer = await stream;
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('[DONE]');
    expect(await primary.exited).toBe(0);
    const lines = primary.lines();
    expect(lines.filter((line) => line.msg === 'worker stopped')).toHaveLength(2);
    expect(lines.some((line) => line.msg === 'task-router stopped')).toBe(true);
    expect(lines.some((line) => line.msg.startsWith('shutdown cut'))).toBe(false);
  });
});
