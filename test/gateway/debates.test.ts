import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { loadPrompts } from '../../middleware/prompts.js';
import { DecisionRecordSchema, taskKeyOf, type PromptSet } from '../../src/index.js';
import { writeTestConfig } from '../support/config-file.js';
import { startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';

const TOKEN = 'admin-token-for-debate-tests';
const SESSION = 'x-task-router-session';
const FIX = 'fix the failing tests in src/app.ts';

let dir: string;
let upstream: FakeUpstream;
let prompts: PromptSet;
let gateway: RunningGateway | null = null;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-debates-'));
  upstream = await startFakeUpstream();
  prompts = await loadPrompts();
});

afterAll(async () => {
  await upstream.close();
  await rm(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await gateway?.close();
  gateway = null;
  upstream.reset();
});

async function start(name: string, options: { env?: Record<string, string>; sessions?: Record<string, unknown> } = {}): Promise<RunningGateway> {
  const file = await writeTestConfig(dir, name, options.sessions ? { sessions: options.sessions } : {});
  gateway = await startGateway({ configFile: file, env: { UPSTREAM_URL: upstream.url, LOG_DIR: join(dir, `${name}-logs`), ...options.env } });
  return gateway;
}

interface Sent {
  readonly status: number;
  readonly headers: Headers;
  /** The system prompt the upstream received. */
  readonly system: string;
}

/** One chat request; `history` earlier turns (an agent loop resends them), `content` the latest human turn. */
async function chat(url: string, content: string, headers: Record<string, string> = {}, format: 'openai' | 'anthropic' = 'openai'): Promise<Sent> {
  const before = upstream.requests.length;
  const path = format === 'openai' ? '/v1/chat/completions' : '/v1/messages';
  const body = format === 'openai'
    ? { model: 'm', messages: [{ role: 'system', content: 'client prompt' }, { role: 'user', content }] }
    : { model: 'm', max_tokens: 16, system: 'client prompt', messages: [{ role: 'user', content }] };
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  await res.text();
  if (res.status !== 200) return { status: res.status, headers: res.headers, system: '' };
  const [request] = (await upstream.waitForRequests(before + 1)).slice(before);
  const json = request?.json as { messages: { role: string; content: string }[]; system?: string };
  const system = format === 'openai' ? json.messages[0]?.content ?? '' : String(json.system);
  // What the client got back is what the upstream was told.
  expect(request?.headers['x-task-router-debate']).toBe(res.headers.get('x-task-router-debate') ?? undefined);
  return { status: res.status, headers: res.headers, system };
}

/** A reply of POST /router/outcomes: the task's counts and what the next request carries, or an error. */
interface OutcomeReply {
  readonly session: string;
  readonly task: string;
  readonly outcome: string;
  readonly failures: number;
  readonly rejections: number;
  readonly next: { readonly verdict: string; readonly trigger: string; readonly task: string } | null;
  readonly error: { readonly message: string; readonly type: string; readonly details?: readonly string[] };
}

async function report(url: string, body: unknown): Promise<{ status: number; json: OutcomeReply }> {
  const res = await fetch(`${url}/router/outcomes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as OutcomeReply };
}

/** The decision id a chat request got back: what an outcome report names its task by. */
const decisionOf = (sent: Sent) => sent.headers.get('x-task-router-decision-id') as string;

const action = () => prompts.action;
const withFailure = (base: string) => `${base}\n\n${prompts.debateFailure}`;
const withEscalate = (base: string) => `${base}\n\n${prompts.escalate}`;

async function metricSum(url: string, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
    .reduce((total, line) => total + Number(line.split(' ').at(-1)), 0);
}

describe('a scripted session over HTTP', () => {
  it('two failures bring a debate, a failure after it an escalation, success a clean slate; each prompt goes out once', async () => {
    const { url } = await start('scripted.yaml', { env: { ADMIN_TOKEN: TOKEN } });
    const s = { [SESSION]: 'session-1' };
    const task = taskKeyOf(FIX);

    // The task starts: the route's prompt only, the task key back in a header.
    const first = await chat(url, FIX, s);
    expect(first.system).toBe(action());
    expect(first.headers.get('x-task-router-task')).toBe(task);
    expect(first.headers.get('x-task-router-debate')).toBeNull();

    // First failure, named by the decision id the request got back. No debate yet.
    expect(await report(url, { session: 'session-1', decision: decisionOf(first), outcome: 'failure', error: 'Test "auth" failed: expected 200, got 500' }))
      .toEqual({ status: 200, json: { session: 'session-1', task, outcome: 'failure', failures: 1, rejections: 0, next: null } });
    const retry = await chat(url, FIX, s);
    expect(retry.system).toBe(action());

    // Second failure, named by the retry's decision id: the next request carries the failure debate.
    const second = await report(url, { session: 'session-1', decision: decisionOf(retry), outcome: 'failure', error: 'Test "auth" failed: expected 200, got 502' });
    expect(second.json).toMatchObject({ task, failures: 2, next: { verdict: 'DEBATE_FAILURE', trigger: 'consecutive_failures', task } });
    const debated = await chat(url, FIX, s);
    expect(debated.system).toBe(withFailure(action()));
    expect(debated.headers.get('x-task-router-debate')).toBe(`failure; stakes=none; trigger=consecutive_failures; failures=2; rejections=0; task=${task}`);

    // Delivered once: the agent loop's next step goes without it.
    const step = await chat(url, FIX, s);
    expect(step.system).toBe(action());

    // Another session is untouched, and so is a request without a session.
    expect((await chat(url, FIX, { [SESSION]: 'session-2' })).system).toBe(action());
    const anonymous = await chat(url, FIX);
    expect(anonymous.system).toBe(action());
    expect(anonymous.headers.get('x-task-router-task')).toBeNull();

    // A failure after the debate, named by any decision of the task: escalation, once.
    expect((await report(url, { session: 'session-1', decision: decisionOf(step), outcome: 'failure', error: 'Test "auth" failed: expected 200, got 500' })).json)
      .toMatchObject({ failures: 3, next: { verdict: 'AUTO_ESCALATE', trigger: 'failures_after_debate' } });
    const escalated = await chat(url, FIX, s);
    expect(escalated.system).toBe(withEscalate(action()));
    expect(escalated.headers.get('x-task-router-debate')).toMatch(/^escalate; stakes=none; trigger=failures_after_debate; failures=3;/);
    const after = await chat(url, FIX, s);
    expect(after.system).toBe(action());

    // The debug view shows the state behind the admin token.
    const state = await fetch(`${url}/router/sessions/session-1`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(state.status).toBe(200);
    expect(await state.json()).toMatchObject({ session: 'session-1', lastTask: task, tasks: [{ key: task, failures: 3, debated: true }], pending: { verdict: 'AUTO_ESCALATE', delivered: true }, next: null });
    expect((await fetch(`${url}/router/sessions/session-1`)).status).toBe(401);
    // A path whose percent-encoding is broken says so, and how to write a % in it.
    const garbled = await fetch(`${url}/router/sessions/%ZZ`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(garbled.status).toBe(400);
    expect(JSON.stringify(await garbled.json())).toMatch(/percent-encoding.*%25/);

    // Success resets the task: no prompt, and one more failure is no debate.
    expect((await report(url, { session: 'session-1', decision: decisionOf(after), outcome: 'success' })).json).toMatchObject({ failures: 0, rejections: 0, next: null });
    const clean = await chat(url, FIX, s);
    expect(clean.system).toBe(action());
    expect((await report(url, { session: 'session-1', decision: decisionOf(clean), outcome: 'failure' })).json).toMatchObject({ failures: 1, next: null });
    expect((await chat(url, FIX, s)).system).toBe(action());

    expect(await metricSum(url, 'task_router_debates_total', { kind: 'failure', stakes: 'none' })).toBe(1);
    expect(await metricSum(url, 'task_router_debates_total', { kind: 'escalate', stakes: 'none' })).toBe(1);
    expect(await metricSum(url, 'task_router_outcomes_total', { outcome: 'failure' })).toBe(4);
    expect(await metricSum(url, 'task_router_outcomes_total', { outcome: 'success' })).toBe(1);

    // The decision records carry the failure debate on exactly the two requests that got one.
    await gateway?.flushLogs();
    const logDir = join(dir, 'scripted.yaml-logs', 'decisions');
    const [file] = await readdir(logDir);
    const records = (await readFile(join(logDir, file as string), 'utf8')).trim().split('\n').map((line) => DecisionRecordSchema.parse(JSON.parse(line)));
    expect(records.filter((record) => record.failure).map((record) => record.failure)).toEqual([
      { verdict: 'DEBATE_FAILURE', trigger: 'consecutive_failures', task, stakes: 'none' },
      { verdict: 'AUTO_ESCALATE', trigger: 'failures_after_debate', task, stakes: 'none' },
    ]);
  });
});

describe('the other triggers', () => {
  it('planning debates show their stakes; a high-stakes task failing once escalates on the next request, whatever its route', async () => {
    const { url } = await start('high-stakes.yaml');
    const s = { [SESSION]: 'risky' };
    const deploy = await chat(url, 'deploy the api to production', s);
    expect(deploy.headers.get('x-task-router-debate')).toBe('planning; stakes=high');
    expect(deploy.system).toBe(`${action()}\n\n${prompts.debatePlanning}`);
    expect((await report(url, { session: 'risky', decision: decisionOf(deploy), outcome: 'failure', error: 'permission denied' })).json.next).toMatchObject({ verdict: 'AUTO_ESCALATE', trigger: 'high_stakes_failure' });

    // The user asks what happened: an ANSWER, with the escalation after the answer prompt.
    const question = await chat(url, 'what went wrong?', s);
    expect(question.headers.get('x-task-router-mode')).toBe('ANSWER');
    expect(question.system).toBe(withEscalate(prompts.answer));
    expect(question.headers.get('x-task-router-debate')).toMatch(/^escalate; stakes=high; trigger=high_stakes_failure;/);

    // A planning debate and an escalation together: the escalation supersedes the planning debate.
    const redeploy = await chat(url, 'deploy the api to production', s);
    await report(url, { session: 'risky', decision: decisionOf(redeploy), outcome: 'failure' });
    const again = await chat(url, 'deploy the api to production', s);
    expect(again.system).toBe(withEscalate(action()));
    expect(again.headers.get('x-task-router-debate')).toMatch(/^escalate; stakes=high/);
    expect(await metricSum(url, 'task_router_debates_total', { kind: 'planning', stakes: 'high' })).toBe(2);
  });

  it('"just do it" bypasses the planning debate, yet the high-stakes task still escalates on failure', async () => {
    const { url } = await start('confirmed.yaml');
    const s = { [SESSION]: 'sure' };
    const confirmed = await chat(url, 'delete the old release branches, just do it', s);
    expect(confirmed.headers.get('x-task-router-debate')).toBeNull();
    expect(confirmed.system).toBe(action());
    await report(url, { session: 'sure', decision: decisionOf(confirmed), outcome: 'failure' });
    expect((await chat(url, 'delete the old release branches, just do it', s)).system).toBe(withEscalate(action()));
  });

  it('the same error on two different tasks brings a debate', async () => {
    const { url } = await start('same-error.yaml');
    const s = { [SESSION]: 'env' };
    const a = await chat(url, 'run the migrations', s);
    await report(url, { session: 'env', decision: decisionOf(a), outcome: 'failure', error: 'connect ECONNREFUSED 127.0.0.1:5432' });
    const b = await chat(url, 'update the user model in src/models/user.ts', s);
    const second = await report(url, { session: 'env', decision: decisionOf(b), outcome: 'failure', error: 'connect ECONNREFUSED 127.0.0.1:5433' });
    expect(second.json).toMatchObject({ failures: 1, next: { verdict: 'DEBATE_FAILURE', trigger: 'same_error' } });
    expect((await chat(url, 'update the user model in src/models/user.ts', s)).system).toBe(withFailure(action()));
    // The first task is still known by its decision id.
    expect((await report(url, { session: 'env', decision: decisionOf(a), outcome: 'success' })).json).toMatchObject({ task: taskKeyOf('run the migrations'), failures: 0 });
  });

  it('two rejections bring a debate', async () => {
    const { url } = await start('rejections.yaml');
    const s = { [SESSION]: 'picky' };
    const refactor = await chat(url, 'refactor the parser in src/parse.ts', s);
    expect((await report(url, { session: 'picky', decision: decisionOf(refactor), outcome: 'rejected' })).json.next).toBeNull();
    expect((await report(url, { session: 'picky', decision: decisionOf(refactor), outcome: 'rejected' })).json.next).toMatchObject({ verdict: 'DEBATE_FAILURE', trigger: 'rejections' });
    expect((await chat(url, 'refactor the parser in src/parse.ts', s)).system).toBe(withFailure(action()));
  });

  it('read-only and trivial requests are never debated', async () => {
    const { url } = await start('read-only.yaml');
    for (const [session, text] of [['reader', 'search the codebase for auth handlers'], ['trivial', 'pwd']] as const) {
      const decision = decisionOf(await chat(url, text, { [SESSION]: session }));
      await report(url, { session, decision, outcome: 'failure' });
      expect((await report(url, { session, decision, outcome: 'failure' })).json).toMatchObject({ failures: 2, next: null });
      expect((await chat(url, text, { [SESSION]: session })).headers.get('x-task-router-debate')).toBeNull();
    }
  });

  it('in soft routing the failure prompt follows the soft-router prompt (Anthropic format too), under a configured header name', async () => {
    const { url } = await start('soft.yaml', { env: { ENABLE_HARD_ROUTING: 'false' }, sessions: { header: 'X-Conversation-Id' } });
    const s = { 'x-conversation-id': 'soft-1' };
    const decision = decisionOf(await chat(url, FIX, s, 'anthropic'));
    await report(url, { session: 'soft-1', decision, outcome: 'failure' });
    await report(url, { session: 'soft-1', decision, outcome: 'failure' });
    const soft = await chat(url, FIX, s, 'anthropic');
    expect(soft.headers.get('x-task-router-routing')).toBe('soft');
    expect(soft.system).toBe(withFailure(prompts.softRouter));
    // The default header means nothing on this gateway.
    expect((await chat(url, FIX, { [SESSION]: 'soft-1' }, 'anthropic')).headers.get('x-task-router-task')).toBeNull();
  });
});

describe('a planning debate is reported only when its prompt was sent', () => {
  const RISKY = 'drop the users table in the production database';

  it('soft routing (the flag off, then on, then flipped off by the admin API): no debate header either way, none counted', async () => {
    const { url } = await start('soft-planning.yaml', { env: { ENABLE_HARD_ROUTING: 'false', ADMIN_TOKEN: TOKEN } });
    const soft = await chat(url, RISKY);
    expect(soft.headers.get('x-task-router-routing')).toBe('soft');
    expect(soft.system).toBe(prompts.softRouter);
    // chat() also checks that the upstream was told what the client was: no header on either side.
    expect(soft.headers.get('x-task-router-debate')).toBeNull();
    expect(await metricSum(url, 'task_router_debates_total', { kind: 'planning' })).toBe(0);

    const flip = (hardRouting: boolean) => fetch(`${url}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ hardRouting }) });
    expect((await flip(true)).status).toBe(200);
    const hard = await chat(url, RISKY);
    expect(hard.system).toBe(`${action()}\n\n${prompts.debatePlanning}`);
    expect(hard.headers.get('x-task-router-debate')).toBe('planning; stakes=high');
    expect(await metricSum(url, 'task_router_debates_total', { kind: 'planning' })).toBe(1);

    expect((await flip(false)).status).toBe(200);
    const flipped = await chat(url, RISKY);
    expect(flipped.headers.get('x-task-router-routing')).toBe('soft');
    expect(flipped.system).not.toContain(prompts.debatePlanning);
    expect(flipped.headers.get('x-task-router-debate')).toBeNull();
    expect(await metricSum(url, 'task_router_debates_total', { kind: 'planning' })).toBe(1);
  });
});

describe('bad input', () => {
  it('POST /router/outcomes answers 400 with the reasons for a body that does not fit, the same 404 for an unknown session or task', async () => {
    const { url } = await start('validation.yaml');
    const decision = decisionOf(await chat(url, FIX, { [SESSION]: 'known' }));
    const bad: unknown[] = [
      {},
      { session: 'known', decision },
      { session: 'known', decision, outcome: 'maybe' },
      { session: 'known', decision, outcome: 'failure', extra: 1 },
      { session: 'has spaces', decision, outcome: 'failure' },
      { session: 'known', outcome: 'failure' },
      { session: 'known', decision: 'not-a-decision', outcome: 'failure' },
      { session: 'known', decision: taskKeyOf(FIX), outcome: 'failure' },
      { session: 'known', decision, task: taskKeyOf(FIX), outcome: 'failure' },
      { session: 'known', decision, outcome: 'failure', error: 42 },
      [],
      'not json',
    ];
    for (const body of bad) {
      const res = await report(url, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.type).toBe('invalid_request_error');
      expect(res.json.error.message).toMatch(/JSON/);
    }
    expect((await report(url, { session: 'known', decision, outcome: 'failure', extra: 1 })).json.error.details?.join()).toMatch(/extra/);
    expect((await report(url, { session: 'known', outcome: 'failure' })).json.error.details?.join()).toMatch(/decision/);
    expect((await report(url, { session: 'known', decision, task: taskKeyOf(FIX), outcome: 'failure' })).json.error.details?.join()).toMatch(/task.*decision/);
    const stranger = await report(url, { session: 'stranger', decision, outcome: 'failure' });
    const unknownTask = await report(url, { session: 'known', decision: '00000000-0000-4000-8000-000000000000', outcome: 'failure' });
    expect(stranger.status).toBe(404);
    expect(unknownTask).toEqual(stranger);
    // Nothing was recorded by the refused reports: the first real one counts one failure.
    expect((await report(url, { session: 'known', decision, outcome: 'failure' })).json).toMatchObject({ failures: 1 });
    expect(upstream.requests.filter((request) => request.path.startsWith('/router'))).toEqual([]);
  });

  it('a chat request with a session id we will not key state by gets a 400 in its API shape', async () => {
    const { url } = await start('bad-session.yaml');
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', [SESSION]: 'x'.repeat(200) }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: FIX }] }) });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringMatching(/x-task-router-session/) } });
  });

  it('GET /router/sessions/:id is off without ADMIN_TOKEN and never proxied', async () => {
    const { url } = await start('no-admin.yaml');
    await chat(url, FIX, { [SESSION]: 'known' });
    const res = await fetch(`${url}/router/sessions/known`);
    expect(res.status).toBe(404);
    expect(await res.text()).toMatch(/ADMIN_TOKEN/);
    expect(upstream.requests.filter((request) => request.path.startsWith('/router'))).toEqual([]);
  });

  it('the sessions config is validated at start', async () => {
    const file = await writeTestConfig(dir, 'bad-sessions.yaml', { sessions: { maxSessions: 0, header: 'not a header' } });
    await expect(startGateway({ configFile: file, env: { UPSTREAM_URL: upstream.url } })).rejects.toThrow(/sessions\.header[\s\S]*sessions\.maxSessions|sessions\.maxSessions[\s\S]*sessions\.header/);
  });
});
