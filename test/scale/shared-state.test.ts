/**
 * Two gateways (separate startGateway instances, each with its own memory, as two replicas behind a
 * load balancer) sharing one real Redis: a session's failures reported on either count together, a
 * failure on A escalates the task on B, an admin flip on A changes routing on B, a replica started late
 * takes the fleet's flag, and many reports racing through both replicas are all counted.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { RedisLink } from '../../gateway/redis-link.js';
import { RedisSessionStore, bounded } from '../../gateway/redis-sessions.js';
import { MemorySessionStore, SessionTracker } from '../../middleware/sessions.js';
import { taskKeyOf } from '../../src/index.js';
import { writeTestConfig } from '../support/config-file.js';
import { apiReply, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { freePort, startRedis, type TestRedis } from '../support/redis.js';
import { scrape, total } from '../support/running.js';

const ADMIN = 'shared-state-admin-token';
const FIX = 'fix the failing tests in src/app.ts';
const CLIENT_KEY = 'Bearer sk-client-of-the-session';

let dir: string;
let redis: TestRedis;
let upstream: FakeUpstream;
let inspect: ReturnType<typeof createClient>;
const started: RunningGateway[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-shared-state-'));
  redis = await startRedis();
  upstream = await startFakeUpstream(apiReply('ok'));
  inspect = createClient({ url: redis.url });
  await inspect.connect();
});

afterAll(async () => {
  await Promise.all(started.map((gateway) => gateway.close()));
  await inspect?.close();
  await upstream?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

let configs = 0;
/** A gateway on the shared Redis under `prefix`, as its own replica. */
async function replica(prefix: string, redisChanges: Record<string, unknown> = {}): Promise<RunningGateway> {
  configs += 1;
  const file = await writeTestConfig(dir, `replica-${configs}.yaml`, {
    upstream: { url: upstream.url },
    logging: { decisions: false, memory: false },
    state: { redis: { url: redis.url, keyPrefix: prefix, timeoutMs: 500, ...redisChanges } },
  });
  const gateway = await startGateway({ configFile: file, env: { ADMIN_TOKEN: ADMIN } });
  started.push(gateway);
  return gateway;
}

async function chat(url: string, session: string, content = FIX): Promise<Headers> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-task-router-session': session, authorization: CLIENT_KEY },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content }] }),
  });
  await res.text();
  expect(res.status).toBe(200);
  return res.headers;
}

interface Reported {
  readonly failures: number;
  readonly next: { readonly verdict: string; readonly trigger: string } | null;
}

async function report(url: string, session: string, decision: string, outcome: 'failure' | 'success' = 'failure'): Promise<Reported> {
  const res = await fetch(`${url}/router/outcomes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ session, decision, outcome, error: 'Test "auth" failed: expected 200, got 500' }) });
  expect(res.status).toBe(200);
  return (await res.json()) as Reported;
}

const decisionOf = (headers: Headers) => headers.get('x-task-router-decision-id') as string;

async function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('two replicas, one Redis', () => {
  let a: RunningGateway;
  let b: RunningGateway;
  const prefix = `t-${randomUUID().slice(0, 8)}:`;

  beforeAll(async () => {
    [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
  });

  it('a failure reported on A escalates the task on B', async () => {
    const session = 'escalates-across';
    const task = taskKeyOf(FIX);
    const first = await chat(a.url, session);
    expect(first.get('x-task-router-task')).toBe(task);
    expect(await report(a.url, session, decisionOf(first))).toMatchObject({ failures: 1, next: null });

    // The second failure, reported on B about B's own request, is the task's second: a debate.
    const retry = await chat(b.url, session);
    expect(retry.get('x-task-router-debate')).toBeNull();
    expect(await report(b.url, session, decisionOf(retry))).toMatchObject({ failures: 2, next: { verdict: 'DEBATE_FAILURE', trigger: 'consecutive_failures' } });
    const debated = await chat(a.url, session);
    expect(debated.get('x-task-router-debate')).toBe(`failure; stakes=none; trigger=consecutive_failures; failures=2; rejections=0; task=${task}`);

    // A failure after the debate, reported on A: B's next request carries the escalation, once.
    expect(await report(a.url, session, decisionOf(debated))).toMatchObject({ failures: 3, next: { verdict: 'AUTO_ESCALATE', trigger: 'failures_after_debate' } });
    expect((await chat(b.url, session)).get('x-task-router-debate')).toMatch(/^escalate; stakes=none; trigger=failures_after_debate; failures=3;/);
    expect((await chat(a.url, session)).get('x-task-router-debate')).toBeNull();
  });

  it('an Idempotency-Key used on A for one report is refused on B for another, and repeated on B for the same', async () => {
    const session = `reuse-${randomUUID()}`;
    const decision = decisionOf(await chat(a.url, session));
    const key = randomUUID();
    const send = (url: string, outcome: 'failure' | 'success') => fetch(`${url}/router/outcomes`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify({ session, decision, outcome }) });
    const first = await send(a.url, 'failure');
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ outcome: 'failure', failures: 1 });
    const reused = await send(b.url, 'success');
    expect(reused.status).toBe(422);
    expect(JSON.stringify(await reused.json())).toMatch(/Idempotency-Key was already used for another report/);
    const same = await send(b.url, 'failure');
    expect(same.status).toBe(200);
    expect(await same.json()).toMatchObject({ outcome: 'failure', failures: 1, repeated: true });
  });

  it('session keys are namespaced by keyPrefix and expire after sessions.ttlSeconds idle', async () => {
    await chat(a.url, 'ttl-check');
    const key = `${prefix}session:ttl-check`;
    const ttl = await inspect.pTTL(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3600 * 1000);
    const keys = await inspect.keys('*');
    for (const name of keys) expect(name.startsWith(prefix) || !name.includes('ttl-check')).toBe(true);
    for (const name of keys.filter((each) => each.startsWith(prefix))) expect(await inspect.pTTL(name)).toBeGreaterThan(0);
  });

  it('an admin flip on A changes routing on B within a second or so, and a replica started later takes it', async () => {
    const flip = await fetch(`${a.url}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: '{"hardRouting": false}' });
    expect(flip.status).toBe(200);
    const flipped = performance.now();
    const routing = await until('routing on B', async () => (await chat(b.url, 'flip-check', 'what is a race condition?')).get('x-task-router-routing'), (value) => value === 'soft');
    expect(routing).toBe('soft');
    // Pub/sub carries it in milliseconds; the bound is loose for a busy machine.
    expect(performance.now() - flipped).toBeLessThan(5_000);

    const late = await replica(prefix);
    expect((await (await fetch(`${late.url}/healthz`)).json()) as { hardRouting: boolean }).toMatchObject({ hardRouting: false });
    const state = (await (await fetch(`${late.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { shared: { redis: string } };
    expect(state.shared.redis).toBe('up');

    // And back, from B this time: A and the late replica follow.
    await fetch(`${b.url}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: '{"hardRouting": true}' });
    for (const gateway of [a, late]) {
      await until('hard routing back on', async () => ((await (await fetch(`${gateway.url}/healthz`)).json()) as { hardRouting: boolean }).hardRouting, (on) => on);
    }
  });

  it('an admin reload on A is announced: the shared configuration generation counts it', async () => {
    const before = await inspect.hGet(`${prefix}routing`, 'generation');
    const reload = await fetch(`${a.url}/admin/reload`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } });
    expect(reload.status).toBe(200);
    const generation = await until('generation on B', async () => ((await (await fetch(`${b.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { shared: { generation: number | null } }).shared.generation, (value) => value !== null && value > Number(before ?? 0));
    expect(generation).toBe(Number(before ?? 0) + 1);
  });

  it('many failure reports racing through both replicas at once are all counted', async () => {
    const session = 'race';
    const first = await chat(a.url, session);
    const decision = decisionOf(first);
    const perReplica = 25;
    const reports = Array.from({ length: perReplica * 2 }, (_, index) => report(index % 2 === 0 ? a.url : b.url, session, decision));
    const replies = await Promise.all(reports);
    // Every report saw a distinct count: none overwrote another.
    expect(new Set(replies.map((reply) => reply.failures)).size).toBe(perReplica * 2);
    const state = (await (await fetch(`${b.url}/router/sessions/${session}`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { tasks: { failures: number }[] };
    expect(state.tasks[0]?.failures).toBe(perReplica * 2);
    for (const gateway of [a, b]) expect(total(await scrape(gateway.url), 'task_router_fallbacks_total', { stage: 'state' })).toBe(0);
  });

  it('exposes the state fallback at 0 from the start, besides the routing fallbacks', async () => {
    const samples = await scrape(b.url);
    expect(samples.filter((sample) => sample.name === 'task_router_fallbacks_total').map((sample) => `${sample.labels.stage}/${sample.labels.reason}`)).toContain('state/local');
  });
});

describe('the shared flag when Redis loses its data or missed a flip', () => {
  let own: TestRedis;
  let client: ReturnType<typeof createClient>;
  let a: RunningGateway;
  let b: RunningGateway;
  const prefix = `f-${randomUUID().slice(0, 8)}:`;
  const flip = (gateway: RunningGateway, hardRouting: boolean) =>
    fetch(`${gateway.url}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ hardRouting }) });
  const hardRouting = async (gateway: RunningGateway) => ((await (await fetch(`${gateway.url}/healthz`)).json()) as { hardRouting: boolean }).hardRouting;
  const redisUp = async (gateway: RunningGateway) => ((await (await fetch(`${gateway.url}/admin/state`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as { shared: { redis: string } }).shared.redis;
  const both = async (value: boolean) => {
    for (const gateway of [a, b]) await until(`hardRouting ${value} everywhere`, () => hardRouting(gateway), (on) => on === value);
  };

  beforeAll(async () => {
    own = await startRedis();
    client = createClient({ url: own.url });
    await client.connect();
    [a, b] = await Promise.all([replica(prefix, { url: own.url }), replica(prefix, { url: own.url })]);
    for (const value of [false, true, false, true]) {
      expect((await flip(a, value)).status).toBe(200);
      await both(value);
    }
  });

  afterAll(async () => {
    await client?.close();
    await own?.close();
  });

  it('the record gone (as its 30-day expiry would leave it): a flip on B still reaches A', async () => {
    await client.del(`${prefix}routing`);
    await flip(b, false);
    await both(false);
    await flip(b, true);
    await both(true);
  });

  it('Redis restarted empty: the flag is put back, and flips go on reaching every replica', async () => {
    await flip(a, false);
    await both(false);
    await client.close();
    await own.stop();
    await own.start();
    client = createClient({ url: own.url });
    await client.connect();
    for (const gateway of [a, b]) await until('Redis up again', () => redisUp(gateway), (state) => state === 'up', 10_000);
    await until('the flag put back', () => client.hGet(`${prefix}routing`, 'hardRouting'), (stored) => stored === '0', 10_000);
    await flip(b, true);
    await both(true);
  });

  it('a flip Redis missed is not published after a newer one: the newest wins everywhere', async () => {
    own.pause();
    await flip(b, false);
    // Past state.redis.timeoutMs (500 ms): the publish has failed and waits for Redis.
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    own.resume();
    await new Promise((resolve) => setTimeout(resolve, 500));
    await flip(b, true);
    await both(true);
    // Long enough for a stale publish to arrive and be applied.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect([await hardRouting(a), await hardRouting(b), await client.hGet(`${prefix}routing`, 'hardRouting')]).toEqual([true, true, '1']);
  });
});

describe('the session store on its own', () => {
  const settings = (url: string, prefix: string) => ({ url, keyPrefix: prefix, timeoutMs: 500, connectTimeoutMs: 2_000, maxStateBytes: 4096 });
  const silent = pino({ level: 'silent' });

  it('trims a state over maxStateBytes, oldest tasks and decisions first, keeping the latest task', () => {
    const tasks = Array.from({ length: 200 }, (_, index) => ({ key: `task-${index}`, stakes: 'none' as const, debatable: true, failures: 1, rejections: 0, debated: false, errors: ['0123456789abcdef'], seenAt: index }));
    const state = { tasks, lastTask: 'task-199', decisions: tasks.map((task) => [randomUUID(), task.key] as const), pending: null, updatedAt: 0 };
    const fitted = bounded(state, 4096);
    expect(fitted).not.toBeNull();
    expect(Buffer.byteLength(fitted?.json ?? '')).toBeLessThanOrEqual(4096);
    const kept = JSON.parse(fitted?.json ?? '{}') as { tasks: { key: string }[]; decisions: unknown[] };
    expect(fitted?.state.tasks.length).toBe(kept.tasks.length);
    expect(kept.tasks.at(-1)?.key).toBe('task-199');
    expect(kept.tasks.length).toBeLessThan(200);
    expect(kept.decisions.length).toBeLessThan(200);
  });

  it('an unreachable Redis costs nothing but the sharing: updates apply locally and each is counted', async () => {
    const port = await freePort();
    const link = await RedisLink.open({ settings: settings(`redis://127.0.0.1:${port}`, 'gone:'), log: silent });
    let degraded = 0;
    const store = new RedisSessionStore(link, { ttlMs: 60_000, maxStateBytes: 4096, maxSessions: 10, local: new MemorySessionStore({ maxSessions: 10, ttlMs: 60_000 }), degraded: () => (degraded += 1) });
    const tracker = new SessionTracker({ header: 'x-task-router-session', maxTasks: 8, maxDecisions: 8 }, store);
    const started = performance.now();
    const decision = randomUUID();
    await tracker.decided('offline', { task: 'abc', decisionId: decision, stakes: 'none', debatable: true });
    const result = await tracker.report('offline', { decision, outcome: 'failure' });
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(result).toMatchObject({ ok: true, task: { failures: 1 } });
    expect(degraded).toBe(2);
    await link.close();
  });

  it('two trackers on one Redis never lose an update, under a short timeout too', async () => {
    const prefix = `race-${randomUUID().slice(0, 8)}:`;
    const links = await Promise.all([0, 1].map(() => RedisLink.open({ settings: settings(redis.url, prefix), log: silent })));
    await Promise.all(links.map((link) => link.ready(5_000)));
    let degraded = 0;
    const trackers = links.map((link) => new SessionTracker({ header: 'x', maxTasks: 8, maxDecisions: 8 }, new RedisSessionStore(link, { ttlMs: 60_000, maxStateBytes: 64 * 1024, maxSessions: 10, local: new MemorySessionStore({ maxSessions: 10, ttlMs: 60_000 }), degraded: () => (degraded += 1) })));
    const decision = randomUUID();
    await trackers[0]?.decided('s', { task: 'task', decisionId: decision, stakes: 'none', debatable: true });
    await Promise.all(Array.from({ length: 100 }, (_, index) => trackers[index % 2]?.report('s', { decision, outcome: 'failure' })));
    expect((await trackers[1]?.state('s'))?.tasks[0]?.failures).toBe(100);
    expect(degraded).toBe(0);
    await Promise.all(links.map((link) => link.close()));
  });
});
