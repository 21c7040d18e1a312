/**
 * The security review's attack, replayed against a real gateway over loopback, one block per class:
 * hop-by-hop headers (the Trailer crash), session poisoning and existence probing on
 * /router/outcomes, path aliases of the chat routes, error pages, huge part arrays, slow clients and
 * endless streams, and the smaller findings (upstream decision headers on unrouted paths, the bearer
 * scheme's case, unknown admin paths, the override header without a token, non-object JSON bodies).
 * The attacks whose defence is a bound on time are in attack.slow.test.ts.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { scratchAndUpstream } from '../support/suite.js';
import type { RunningGateway } from '../../gateway/app.js';
import { taskKeyOf, type JsonObject } from '../../src/index.js';
import { ensureBuilt } from '../support/built.js';
import { ROOT, writeTestConfig } from '../support/config-file.js';
import {
  apiReply,
  closedPort,
  replyJson,
  startGatewayForTest,
  type ApiName,
  type Behaviour,
  type FakeUpstream,
  type TestGateway,
} from '../support/fake-upstream.js';
import { postHead, rawExchange, rawRequest, type RawResponse } from '../support/raw-http.js';
import { scrape, startConfigured, total } from '../support/running.js';
import { APIS, CHAT_PATH, bodyWithUserText, postJson } from '../gateway/clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const ADMIN_TOKEN = 'admin-token-attack-3c9d2e';
const METRICS_TOKEN = 'metrics-token-attack-7a1f0b';
const SESSION = 'x-task-router-session';
const UUID_ZERO = '00000000-0000-4000-8000-000000000000';

let dir: string;
let upstream: FakeUpstream;
const running: { close(): Promise<void> }[] = [];

/** Closed after the test, whatever happens in it. */
function closing<T extends { close(): Promise<void> }>(server: T): T {
  running.push(server);
  return server;
}

scratchAndUpstream('attack', (made) => ({ dir, upstream } = made));
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.close()));
});

const gatewayFor = async (overrides: Parameters<typeof startGatewayForTest>[0]['overrides'] = {}): Promise<TestGateway> =>
  closing(await startGatewayForTest({ upstreamUrl: upstream.url, overrides }));

const configured = async (changes: Parameters<typeof startConfigured>[1] = {}, env: NodeJS.ProcessEnv = {}): Promise<RunningGateway> =>
  closing(await startConfigured(dir, { ...changes, upstream: { url: upstream.url, ...changes.upstream } }, { env }));

/** The error body each API's SDK understands (OpenAI: error.type, param, code; Anthropic: type "error"). */
function expectApiError(api: ApiName | null, response: RawResponse | { status: number; headers: Record<string, string>; body: string }, status: number): { message: string } {
  expect(response.status, response.body.slice(0, 300)).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.body).not.toMatch(/<html|<!DOCTYPE|\n\s+at /i);
  const body = JSON.parse(response.body) as { type?: string; error: { message: string; type: string; param?: unknown; code?: unknown } };
  expect(typeof body.error.message).toBe('string');
  if (api === 'anthropic') expect(body.type).toBe('error');
  else if (api !== null) expect(body.error).toMatchObject({ param: null, code: expect.any(String) });
  return body.error;
}

/** The gateway's own JSON error shape on /router and /admin: {"error": {"message", "type"}}, never HTML or a stack. */
async function expectRouterError(response: Response, status: number): Promise<{ message: string; type: string }> {
  const text = await response.text();
  expect(response.status, text.slice(0, 300)).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(text).not.toMatch(/<html|<!DOCTYPE|\n\s+at /i);
  const body = JSON.parse(text) as { error: { message: string; type: string } };
  expect(body.error.message).toEqual(expect.any(String));
  return body.error;
}

const headersOf = (response: Response): Record<string, string> => Object.fromEntries(response.headers.entries());

// -------------------------------------------------------------------------------------------------
// 1. Hop-by-hop headers: a Trailer header crashed the process; none may reach the upstream.
// -------------------------------------------------------------------------------------------------

const HOP_BY_HOP = ['keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'x-hop-named'];
const HOP_HEADERS = [
  'Connection: keep-alive, X-Hop-Named',
  'X-Hop-Named: only for the next hop',
  'Keep-Alive: timeout=30',
  'Proxy-Connection: keep-alive',
  'TE: trailers',
  'Trailer: X-Checksum',
  'Upgrade: h2c',
];

/** `chunked`: the body's length was unknown, so the gateway frames it anew as chunked (without trailers). */
function expectNoHopByHop(seen: { headers: Record<string, string | string[] | undefined> }, chunked = false): void {
  for (const name of HOP_BY_HOP) expect(seen.headers[name], name).toBeUndefined();
  expect(seen.headers['transfer-encoding']).toBe(chunked ? 'chunked' : undefined);
  // The only Connection header upstream is the gateway's own agent's.
  expect([undefined, 'keep-alive']).toContain(seen.headers.connection);
}

/** A chunked body with a real trailer field after the last chunk. */
function chunkedWithTrailer(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n0\r\nX-Checksum: 5d41402a\r\n\r\n`;
}

describe('1. hop-by-hop request headers', () => {
  it('GET /v1/models with Trailer and the other hop-by-hop headers is proxied without them, and the gateway lives on', async () => {
    const gateway = await gatewayFor();
    upstream.respond(replyJson(200, { object: 'list', data: [] }));
    const response = await rawRequest(gateway.url, ['GET /v1/models HTTP/1.1', 'Host: 127.0.0.1', ...HOP_HEADERS], '', 5_000);
    expect(response?.status).toBe(200);
    expect(JSON.parse(response?.body ?? '')).toEqual({ object: 'list', data: [] });
    expect(upstream.last().path).toBe('/v1/models');
    expectNoHopByHop(upstream.last());
    // Still serving.
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  });

  it.each(['GET', 'DELETE'])('%s with "Connection: content-length" keeps its body framed: what the body holds never reaches the upstream as a request of its own', async (method) => {
    const gateway = await gatewayFor();
    upstream.respond(replyJson(200, { object: 'list', data: [] }));
    const inner = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'never routed' }] });
    const smuggled = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Task-Router-Mode: FORGED\r\nContent-Length: ${inner.length}\r\n\r\n${inner}`;
    const before = upstream.requests.length;
    const response = await rawRequest(gateway.url, [`${method} /v1/models HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: keep-alive, content-length', `Content-Length: ${smuggled.length}`], smuggled, 5_000);
    expect(response?.status).toBe(200);
    // Time for a second request to arrive upstream, were the body sent unframed.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const seen = upstream.requests.slice(before);
    expect(seen.map((request) => `${request.method} ${request.path}`)).toEqual([`${method} /v1/models`]);
    expect(seen[0]?.headers['content-length']).toBe(String(smuggled.length));
    expect(seen[0]?.text).toBe(smuggled);
  });

  it('POST /v1/embeddings (not routed) keeps its body and loses the hop-by-hop headers', async () => {
    const gateway = await gatewayFor();
    upstream.respond(replyJson(200, { object: 'list', data: [] }));
    const body = JSON.stringify({ model: 'e', input: 'hello' });
    const response = await rawRequest(gateway.url, postHead('/v1/embeddings', body, HOP_HEADERS), body, 5_000);
    expect(response?.status).toBe(200);
    expect(upstream.last().text).toBe(body);
    expectNoHopByHop(upstream.last());
  });

  it.each(APIS)('%s: a chat request with them is routed (no 500 page) and forwarded without them', async (api) => {
    const gateway = await gatewayFor();
    const body = JSON.stringify(bodyWithUserText(api, ACTION));
    const response = await rawRequest(gateway.url, postHead(CHAT_PATH[api], body, HOP_HEADERS), body, 5_000);
    expect(response?.status, response?.body.slice(0, 300)).toBe(200);
    expect(response?.headers['x-task-router-mode']).toBe('ACTION');
    expectNoHopByHop(upstream.last());
    expect(upstream.last().json).toMatchObject({ model: expect.any(String) });
  });

  it.each(['/v1/chat/completions', '/v1/embeddings'])('%s: a chunked body with a real trailer is forwarded whole, without the trailer', async (path) => {
    const gateway = await gatewayFor();
    upstream.respond(apiReply('ok'));
    const json = JSON.stringify(bodyWithUserText('openai-chat', ACTION));
    const head = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Type: application/json', 'Transfer-Encoding: chunked', 'Trailer: X-Checksum', 'TE: trailers'];
    const response = await rawRequest(gateway.url, head, chunkedWithTrailer(json), 5_000);
    expect(response?.status, response?.body.slice(0, 300)).toBe(200);
    const seen = upstream.last();
    // A routed body is re-sent with its length; a proxied one of unknown length goes on chunked.
    expectNoHopByHop(seen, path === '/v1/embeddings');
    expect(seen.headers['x-checksum']).toBeUndefined();
    if (path === '/v1/embeddings') expect(seen.text).toBe(json);
    else expect(seen.json.messages.at(-1)).toEqual({ role: 'user', content: ACTION });
  });

  it('hop-by-hop headers of the upstream response (a Trailer on a sized body too) never reach the client and never crash the gateway', async () => {
    const gateway = await gatewayFor();
    const rawReply: Behaviour = (req) => {
      const body = '{"object":"list","data":[]}';
      req.socket.end([
        'HTTP/1.1 200 OK',
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
        'Trailer: X-Upstream-Checksum',
        'Keep-Alive: timeout=99',
        'Connection: keep-alive, X-Up-Hop',
        'X-Up-Hop: upstream only',
        'Upgrade: h2c',
        'Proxy-Connection: keep-alive',
        'X-Task-Router-Mode: ANSWER',
        '',
        body,
      ].join('\r\n'));
    };
    for (const [method, path] of [['GET', '/v1/models'], ['POST', '/v1/chat/completions']] as const) {
      upstream.respondOnce(rawReply);
      const body = method === 'POST' ? JSON.stringify(bodyWithUserText('openai-chat', ACTION)) : '';
      const head = method === 'POST' ? postHead(path, body) : [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
      const response = await rawRequest(gateway.url, head, body, 5_000);
      expect(response?.status, path).toBe(200);
      expect(response?.body).toBe('{"object":"list","data":[]}');
      for (const name of ['trailer', 'x-up-hop', 'upgrade', 'proxy-connection']) expect(response?.headers[name], `${path}: ${name}`).toBeUndefined();
      expect(response?.headers['keep-alive'] ?? '').not.toContain('99');
      expect(response?.headers.connection ?? '').not.toMatch(/x-up-hop/i);
      expect(response?.headers['x-task-router-mode']).toBe(method === 'POST' ? 'ACTION' : undefined);
    }
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  });

  it('an observer that throws on the proxy path costs nothing: the client gets its answer, or its 502', async () => {
    const boom = () => {
      throw new Error('observer failed');
    };
    const gateway = await gatewayFor({ hooks: { response: boom, error: boom } });
    const ok = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    expect(ok.status).toBe(200);
    await ok.arrayBuffer();
    const down = closing(await startGatewayForTest({ upstreamUrl: `http://127.0.0.1:${await closedPort()}`, overrides: { hooks: { error: boom } } }));
    const failed = await postJson(down.url, CHAT_PATH.anthropic, bodyWithUserText('anthropic', ACTION));
    expectApiError('anthropic', { status: failed.status, headers: headersOf(failed), body: await failed.text() }, 502);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  });
});

/** A gateway process of its own (the built CLI, or a script around startGateway); its stdout lines are JSON logs. */
interface ChildGateway {
  readonly child: ChildProcessWithoutNullStreams;
  readonly url: string;
  output(): string;
  exited: Promise<number | null>;
}

async function spawnGateway(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ChildGateway> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH, ...env } });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString('utf8'); });
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString('utf8'); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the gateway did not start:\n${output}`)), 20_000);
    const look = () => {
      const found = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(output);
      if (found) {
        clearTimeout(timer);
        child.stdout.off('data', look);
        resolve(found[1] as string);
      }
    };
    child.stdout.on('data', look);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited with ${code}:\n${output}`));
    });
  });
  const gateway: ChildGateway = { child, url, output: () => output, exited };
  running.push({ close: async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  } });
  return gateway;
}

describe('1. the gateway process survives', () => {
  it('`task-router serve`: curl 127.0.0.1/v1/models -H "Trailer: x" no longer ends the process', async () => {
    const main = ensureBuilt('cli/main.js');
    const config = await writeTestConfig(dir, 'serve-trailer.yaml', { upstream: { url: upstream.url }, logging: { decisions: false, memory: false } });
    const gateway = await spawnGateway([main, 'serve', '--config', config]);
    upstream.respond(replyJson(200, { object: 'list', data: [] }));
    for (const path of ['/v1/models', '/v1/models']) {
      const response = await rawRequest(gateway.url, [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Trailer: x', 'Connection: close'], '', 5_000);
      expect(response?.status, gateway.output()).toBe(200);
    }
    const chat = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    expect(chat.status).toBe(200);
    await chat.arrayBuffer();
    expect(gateway.child.exitCode).toBeNull();
  });

  /** startGateway in a process of its own, which throws or rejects on command (a line on stdin). */
  const SCRIPT = `
    import { pino } from 'pino';
    import { startGateway } from ${JSON.stringify(join(ROOT, 'dist/gateway/app.js'))};
    const gateway = await startGateway({ configFile: process.env.CONFIG_FILE, env: {}, log: pino({ base: null }) });
    console.log(JSON.stringify({ msg: 'ready', url: gateway.url }));
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (line) => {
      for (const command of line.trim().split('\\n')) {
        if (command === 'socket-error') setImmediate(() => { throw Object.assign(new Error('write after end'), { code: 'ERR_STREAM_WRITE_AFTER_END' }); });
        if (command === 'rejection') void Promise.reject(new Error('nobody waited for this promise'));
        if (command === 'bug') setImmediate(() => { throw new TypeError('state is not a function'); });
      }
    });
  `;

  it('startGateway: a request-scoped uncaught exception and an unhandled rejection are logged and counted, and it keeps serving; anything else exits 1', async () => {
    ensureBuilt('gateway/app.js');
    const config = await writeTestConfig(dir, 'last-resort.yaml', { upstream: { url: upstream.url }, logging: { decisions: false, memory: false } });
    const gateway = await spawnGateway(['--input-type=module', '-e', SCRIPT], { CONFIG_FILE: config });
    gateway.child.stdin.write('socket-error\nrejection\n');
    const deadline = performance.now() + 10_000;
    let samples = await scrape(gateway.url);
    while (total(samples, 'task_router_uncaught_errors_total') < 2 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      samples = await scrape(gateway.url);
    }
    expect(total(samples, 'task_router_uncaught_errors_total', { kind: 'uncaught_exception', action: 'continued' })).toBe(1);
    expect(total(samples, 'task_router_uncaught_errors_total', { kind: 'unhandled_rejection', action: 'continued' })).toBe(1);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    // The log lines come through the child's stdout pipe, which may deliver them after the counters were scraped.
    const logged = () => /ERR_STREAM_WRITE_AFTER_END/.test(gateway.output()) && /nobody waited for this promise/.test(gateway.output());
    while (!logged() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(gateway.output()).toMatch(/ERR_STREAM_WRITE_AFTER_END/);
    expect(gateway.output()).toMatch(/nobody waited for this promise/);

    // A throw of unknown origin leaves the process in a state nobody can vouch for: it exits, logged.
    gateway.child.stdin.write('bug\n');
    expect(await gateway.exited).toBe(1);
    expect(gateway.output()).toMatch(/state is not a function/);
  });
});

// -------------------------------------------------------------------------------------------------
// 3. Session poisoning and existence probing on POST /router/outcomes
// -------------------------------------------------------------------------------------------------

describe('3. outcomes need what the gateway handed the client', () => {
  async function chat(url: string, session: string, text = ACTION, headers: Record<string, string> = {}): Promise<Response> {
    const response = await postJson(url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', text), { [SESSION]: session, ...headers });
    await response.arrayBuffer();
    expect(response.status).toBe(200);
    return response;
  }
  const report = (url: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}/router/outcomes`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('a report retried with its Idempotency-Key is answered, not counted again: one failure brings no debate', async () => {
    const gateway = await configured();
    const decision = (await chat(gateway.url, 'retrier-1')).headers.get('x-task-router-decision-id') as string;
    const body = { session: 'retrier-1', decision, outcome: 'failure' };
    const key = { 'idempotency-key': 'f2c1b7e0-5d3a-4c1e-9a7b-2f6d8e4c1a90' };
    expect(await (await report(gateway.url, body, key)).json()).toMatchObject({ failures: 1, next: null });
    const retried = await report(gateway.url, body, key);
    expect(retried.status).toBe(200);
    expect(await retried.json()).toMatchObject({ failures: 1, repeated: true, next: null });
    expect((await chat(gateway.url, 'retrier-1')).headers.get('x-task-router-debate')).toBeNull();
    await expectRouterError(await report(gateway.url, body, { 'idempotency-key': 'has spaces' }), 400);
  });

  it('an Idempotency-Key used again for another report is refused with 422; the first report is what counts', async () => {
    const gateway = await configured();
    const decisionOf = (response: Response) => response.headers.get('x-task-router-decision-id') as string;
    const decision = decisionOf(await chat(gateway.url, 'reuser-1'));
    const other = decisionOf(await chat(gateway.url, 'reuser-1', 'rotate the invoice worker logs tonight'));
    const key = { 'idempotency-key': '7d0c5a52-1f2e-4b8a-9c3d-5e6f7a8b9c0d' };
    const failure = { session: 'reuser-1', decision, outcome: 'failure' };
    expect(await (await report(gateway.url, failure, key)).json()).toMatchObject({ outcome: 'failure', failures: 1 });
    for (const another of [{ ...failure, outcome: 'success' }, { ...failure, decision: other }]) {
      const error = await expectRouterError(await report(gateway.url, another, key), 422);
      expect(JSON.stringify(error)).toMatch(/Idempotency-Key was already used for another report/);
    }
    const same = await report(gateway.url, failure, key);
    expect(same.status).toBe(200);
    expect(await same.json()).toMatchObject({ outcome: 'failure', failures: 1, repeated: true });
    // The refused reports changed nothing: a second failure, under a key of its own, is the task's second.
    expect(await (await report(gateway.url, failure, { 'idempotency-key': 'another-key' })).json()).toMatchObject({ failures: 2 });
  });

  it('a report without the decision id, with a guessed one, or with the task key is refused; the victim is not debated', async () => {
    const gateway = await configured();
    const victim = await chat(gateway.url, 'victim-7');
    expect(victim.headers.get('x-task-router-decision-id')).toMatch(/^[0-9a-f-]{36}$/);
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const error = await expectRouterError(await report(gateway.url, { session: 'victim-7', outcome: 'failure' }), 400);
      expect(JSON.stringify(error)).toMatch(/decision/);
      await expectRouterError(await report(gateway.url, { session: 'victim-7', task: taskKeyOf(ACTION), outcome: 'failure' }), 400);
      await expectRouterError(await report(gateway.url, { session: 'victim-7', decision: UUID_ZERO, outcome: 'failure' }), 404);
    }
    const next = await chat(gateway.url, 'victim-7');
    expect(next.headers.get('x-task-router-debate')).toBeNull();
  });

  it('an attacker cannot wipe a failing task with "success"; its holder still gets the debate', async () => {
    const gateway = await configured();
    const decision = (await chat(gateway.url, 'victim-8')).headers.get('x-task-router-decision-id') as string;
    const first = await report(gateway.url, { session: 'victim-8', decision, outcome: 'failure' });
    expect(await first.json()).toMatchObject({ failures: 1, next: null });
    await expectRouterError(await report(gateway.url, { session: 'victim-8', outcome: 'success' }), 400);
    await expectRouterError(await report(gateway.url, { session: 'victim-8', decision: UUID_ZERO, outcome: 'success' }), 404);
    const second = await report(gateway.url, { session: 'victim-8', decision, outcome: 'failure' });
    expect(await second.json()).toMatchObject({ failures: 2, next: { verdict: 'DEBATE_FAILURE' } });
    expect((await chat(gateway.url, 'victim-8')).headers.get('x-task-router-debate')).toMatch(/^failure;/);
  });

  it('unknown session, unknown decision and another session\'s decision answer alike: no existence oracle', async () => {
    const gateway = await configured();
    const other = (await chat(gateway.url, 'other-session')).headers.get('x-task-router-decision-id') as string;
    await chat(gateway.url, 'known-session');
    const answers = await Promise.all([
      report(gateway.url, { session: 'never-seen', decision: UUID_ZERO, outcome: 'failure' }),
      report(gateway.url, { session: 'known-session', decision: UUID_ZERO, outcome: 'failure' }),
      report(gateway.url, { session: 'known-session', decision: other, outcome: 'failure' }),
      report(gateway.url, { session: 'never-seen', decision: other, outcome: 'failure' }),
    ].map(async (pending) => {
      const response = await pending;
      return { status: response.status, body: await response.text() };
    }));
    expect(answers[0]?.status).toBe(404);
    for (const answer of answers) expect(answer).toEqual(answers[0]);
  });

  it('a client with another API key cannot join a session: it neither takes nor sees the debate waiting there, and cannot report in it', async () => {
    const gateway = await configured();
    const owner = { authorization: 'Bearer sk-owner-key-0001' };
    const intruder = { 'x-api-key': 'sk-intruder-key-0002' };
    const decision = (await chat(gateway.url, 'victim-9', ACTION, owner)).headers.get('x-task-router-decision-id') as string;
    await report(gateway.url, { session: 'victim-9', decision, outcome: 'failure' });
    expect(await (await report(gateway.url, { session: 'victim-9', decision, outcome: 'failure' })).json()).toMatchObject({ next: { verdict: 'DEBATE_FAILURE' } });
    const joined = await chat(gateway.url, 'victim-9', ACTION, intruder);
    expect(joined.headers.get('x-task-router-debate')).toBeNull();
    const own = joined.headers.get('x-task-router-decision-id') as string;
    const refused = await report(gateway.url, { session: 'victim-9', decision: own, outcome: 'failure' });
    const unknown = await report(gateway.url, { session: 'never-seen', decision: own, outcome: 'failure' });
    expect({ status: refused.status, body: await refused.text() }).toEqual({ status: 404, body: await unknown.text() });
    // The debate still waits for the session's owner.
    expect((await chat(gateway.url, 'victim-9', ACTION, owner)).headers.get('x-task-router-debate')).toMatch(/^failure; stakes=none; trigger=consecutive_failures; failures=2;/);
  });

  it('with outcomes.token set, reports need it as a bearer token (any case of the scheme)', async () => {
    const token = 'outcomes-token-2b7e151628aed2a6';
    const gateway = await configured({ outcomes: { token } });
    const decision = (await chat(gateway.url, 'with-token')).headers.get('x-task-router-decision-id') as string;
    const body = { session: 'with-token', decision, outcome: 'failure' };
    expect((await expectRouterError(await report(gateway.url, body), 401)).type).toBe('authentication_error');
    await expectRouterError(await report(gateway.url, body, { authorization: `Bearer ${token}x` }), 401);
    const accepted = await report(gateway.url, body, { authorization: `bearer ${token}` });
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toMatchObject({ session: 'with-token', failures: 1 });
    // Neither token nor report ever reaches the upstream.
    expect(upstream.requests.filter((request) => request.path.startsWith('/router'))).toEqual([]);
  });
});

// -------------------------------------------------------------------------------------------------
// 4. Path aliases of the chat routes
// -------------------------------------------------------------------------------------------------

describe('4. path aliases', () => {
  const ALIASES: readonly (readonly [string, ApiName])[] = [
    ['/v1//chat//completions', 'openai-chat'],
    ['/v1/chat//completions', 'openai-chat'],
    ['/v1/chat/%63ompletions', 'openai-chat'],
    ['/v1/chat%2Fcompletions', 'openai-chat'],
    ['/v1/chat%5Ccompletions', 'openai-chat'],
    ['/v1/chat/%2563ompletions', 'openai-chat'],
    ['/v1/CHAT/COMPLETIONS', 'openai-chat'],
    ['/v1/chat/completions;v=1', 'openai-chat'],
    ['/v1/chat/completions/.', 'openai-chat'],
    ['/v1/chat/completions%2F', 'openai-chat'],
    ['/v1/chat/completions%3Fx=1', 'openai-chat'],
    ['/v1/Messages', 'anthropic'],
    ['/v1/messages/x/..', 'anthropic'],
    ['/v1/messages%00', 'anthropic'],
    ['/v1/responses/./', 'openai-responses'],
  ];

  it.each(ALIASES)('POST %s → 400 in the API shape, nothing upstream, even with overrides off and an override sent', async (path, api) => {
    const gateway = await gatewayFor({ allowOverride: false });
    const body = JSON.stringify(bodyWithUserText(api, ACTION));
    const response = await rawRequest(gateway.url, postHead(path, body, ['X-Task-Router-Override: ANSWER']), body, 5_000);
    const error = expectApiError(api, response as RawResponse, 400);
    expect(error.message).toMatch(/path/);
    expect(upstream.requests).toHaveLength(0);
  });

  it('the canonical paths, and spellings that route as what the upstream serves, are routed', async () => {
    const gateway = await gatewayFor();
    for (const path of ['/v1/chat/completions', '/v1/chat/completions/', '/v1/x/../chat/completions', '/V1/chat/completions']) {
      const body = JSON.stringify(bodyWithUserText('openai-chat', ACTION));
      const response = await rawRequest(gateway.url, postHead(path, body), body, 5_000);
      expect(response?.status, path).toBe(200);
      expect(response?.headers['x-task-router-mode'], path).toBe('ACTION');
      expect(upstream.last().json.messages[0].content, path).toBe(gateway.prompts.action);
    }
  });

  it('aliases of the gateway\'s own paths never go upstream', async () => {
    const gateway = await configured({}, { ADMIN_TOKEN });
    for (const [method, path] of [['POST', '//router/outcomes'], ['POST', '/%72outer/outcomes'], ['GET', '/x/../admin/state'], ['GET', '//admin/state']] as const) {
      const body = method === 'POST' ? '{"session":"s","outcome":"failure"}' : '';
      const head = method === 'POST' ? postHead(path, body, [`Authorization: Bearer ${ADMIN_TOKEN}`]) : [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Authorization: Bearer ${ADMIN_TOKEN}`];
      const response = await rawRequest(gateway.url, head, body, 5_000);
      expect(response?.status, path).toBe(400);
      expect(JSON.parse(response?.body ?? '{}').error.message, path).toMatch(/path/);
    }
    expect(upstream.requests).toHaveLength(0);
  });
});

// -------------------------------------------------------------------------------------------------
// 5. Error pages: JSON in the API's shape, never HTML, never a stack
// -------------------------------------------------------------------------------------------------

describe('5. error responses', () => {
  const raw = async (url: string, path: string, body: string | Buffer, headers: readonly string[]) => {
    const response = await rawRequest(url, [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Content-Length: ${body.length}`, ...headers], body, 5_000);
    expect(response).not.toBeNull();
    return response as RawResponse;
  };
  const json = JSON.stringify(bodyWithUserText('openai-chat', ACTION));

  it.each(APIS)('%s: a body that is not gzip, truncated gzip or bad brotli → 400; an unknown encoding or charset → 415', async (api) => {
    const gateway = await gatewayFor();
    const path = CHAT_PATH[api];
    const gzipped = gzipSync(JSON.stringify(bodyWithUserText(api, ACTION)));
    expectApiError(api, await raw(gateway.url, path, 'this is not gzip', ['Content-Type: application/json', 'Content-Encoding: gzip']), 400);
    expectApiError(api, await raw(gateway.url, path, gzipped.subarray(0, gzipped.length - 12), ['Content-Type: application/json', 'Content-Encoding: gzip']), 400);
    expectApiError(api, await raw(gateway.url, path, 'not brotli at all', ['Content-Type: application/json', 'Content-Encoding: br']), 400);
    expect(expectApiError(api, await raw(gateway.url, path, json, ['Content-Type: application/json', 'Content-Encoding: compress']), 415).message).toMatch(/compress/);
    expect(expectApiError(api, await raw(gateway.url, path, json, ['Content-Type: application/json; charset=klingon']), 415).message).toMatch(/KLINGON/i);
    expect(upstream.requests).toHaveLength(0);
  });

  it('/router/outcomes and /admin/* (on the gateway and on their own port) answer bad bodies and unknown paths in JSON', async () => {
    const gateway = await configured({ admin: { host: null, port: null } }, { ADMIN_TOKEN });
    const apart = await configured({ admin: { host: '127.0.0.1', port: 0 } }, { ADMIN_TOKEN });
    const auth = `Authorization: Bearer ${ADMIN_TOKEN}`;
    for (const [url, path] of [[gateway.url, '/router/outcomes'], [gateway.url, '/admin/flags'], [apart.adminUrl as string, '/admin/flags']] as const) {
      for (const [body, headers, status] of [
        ['not gzip', ['Content-Type: application/json', 'Content-Encoding: gzip', auth], 400],
        ['{"hardRouting": true}', ['Content-Type: application/json; charset=klingon', auth], 415],
        ['{"hardRouting": true}', ['Content-Type: application/json', 'Content-Encoding: compress', auth], 415],
        ['{"hardRouting": tru', ['Content-Type: application/json', auth], 400],
        [`{"x":"${'y'.repeat(64 * 1024)}"}`, ['Content-Type: application/json', auth], 413],
      ] as const) {
        const response = await raw(url, path, body, headers);
        expect(response.status, `${path} ${headers.join()}`).toBe(status);
        expect(response.headers['content-type'], path).toMatch(/^application\/json/);
        expect(response.body).not.toMatch(/<html|<!DOCTYPE|\n\s+at /i);
        expect(JSON.parse(response.body).error.message).toEqual(expect.any(String));
      }
    }
    const unknown = await fetch(`${apart.adminUrl}/nope`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    await expectRouterError(unknown, 404);
    expect(upstream.requests).toHaveLength(0);
  });
});

// -------------------------------------------------------------------------------------------------
// 6. Huge part arrays
// -------------------------------------------------------------------------------------------------

describe('6. huge part arrays', () => {
  const PARTS = 380_000;
  /** A user turn of PARTS text parts; `text(index)` gives each. */
  const turn = (api: ApiName, text: (index: number) => string): JsonObject => {
    const type = api === 'openai-responses' ? 'input_text' : 'text';
    const content = Array.from({ length: PARTS }, (_, index) => ({ type, text: text(index) }));
    return api === 'openai-responses' ? { model: 'm', input: [{ role: 'user', content }] } : { model: 'm', max_tokens: 8, messages: [{ role: 'user', content }] };
  };

  it.each([['first', 0], ['last', PARTS - 1]] as const)('over HTTP: an ACTION in the %s of 380k parts is seen', async (_where, at) => {
    const gateway = await gatewayFor({ bodyBytes: 64 * 1024 * 1024 });
    const body = turn('anthropic', (index) => (index === at ? ACTION : 'and so on'));
    const response = await postJson(gateway.url, CHAT_PATH.anthropic, body);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    // The client's parts go upstream untouched: only the human text read for routing is bounded.
    expect(upstream.last().json.messages[0].content).toHaveLength(PARTS);
  }, 60_000);
});

// -------------------------------------------------------------------------------------------------
// 7. Slow clients, connection floods and streams that never end
// -------------------------------------------------------------------------------------------------

describe('7. slow bodies and endless streams', () => {
  it('server.maxConnections bounds open connections; a freed slot serves again', async () => {
    const gateway = await configured({ server: { maxConnections: 2, headersTimeoutMs: 20_000, requestTimeoutMs: 30_000 } });
    const held = [0, 1].map(() => rawExchange(gateway.url, ['GET /healthz HTTP/1.1', 'Host: 127.0.0.1'], '', { endHead: false, timeoutMs: 30_000 }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const refused = rawExchange(gateway.url, ['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Connection: close'], '', { timeoutMs: 10_000 });
    expect(await refused.response).toBeNull();
    held[0]?.socket.destroy();
    await held[0]?.closed;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const served = await rawRequest(gateway.url, ['GET /healthz HTTP/1.1', 'Host: 127.0.0.1', 'Connection: close'], '', 5_000);
    expect(served?.status).toBe(200);
    held[1]?.socket.destroy();
  });
});

// -------------------------------------------------------------------------------------------------
// 8. The smaller findings
// -------------------------------------------------------------------------------------------------

describe('8. nits', () => {
  it('x-task-router-* headers an upstream sends never reach the client on unrouted paths or skipped chat requests', async () => {
    const gateway = await gatewayFor();
    const forged = { 'x-task-router-mode': 'ACTION', 'x-task-router-decision-id': 'from-upstream', 'x-task-router-anything': 'x' };
    upstream.respond(replyJson(200, { object: 'list', data: [] }, forged));
    const models = await fetch(`${gateway.url}/v1/models`);
    await models.arrayBuffer();
    const skipped = await postJson(gateway.url, CHAT_PATH['openai-chat'], { model: 'm', messages: [{ role: 'assistant', content: 'hi' }] });
    await skipped.arrayBuffer();
    for (const response of [models, skipped]) {
      expect(response.status).toBe(200);
      expect([...response.headers.keys()].filter((name) => name.startsWith('x-task-router-'))).toEqual([]);
    }
  });

  it('the Bearer scheme is matched in any case, for the admin API and /metrics', async () => {
    const gateway = await configured({}, { ADMIN_TOKEN, METRICS_TOKEN });
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      expect((await fetch(`${gateway.url}/admin/state`, { headers: { authorization: `${scheme} ${ADMIN_TOKEN}` } })).status, scheme).toBe(200);
      expect((await fetch(`${gateway.url}/metrics`, { headers: { authorization: `${scheme} ${METRICS_TOKEN}` } })).status, scheme).toBe(200);
    }
    expect((await fetch(`${gateway.url}/admin/state`, { headers: { authorization: `Basic ${ADMIN_TOKEN}` } })).status).toBe(401);
  });

  it('unknown /admin paths: 404 "no such admin endpoint" when the admin API is on, the ADMIN_TOKEN hint only when it is off', async () => {
    const on = await configured({}, { ADMIN_TOKEN });
    const known = await fetch(`${on.url}/admin/nope`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect((await expectRouterError(known, 404)).message).toMatch(/no such admin endpoint/);
    await expectRouterError(await fetch(`${on.url}/admin/nope`), 401);
    const off = await configured();
    expect((await expectRouterError(await fetch(`${off.url}/admin/nope`), 404)).message).toMatch(/ADMIN_TOKEN/);
    const apart = await configured({ admin: { host: '127.0.0.1', port: 0 } }, { ADMIN_TOKEN });
    expect((await expectRouterError(await fetch(`${apart.url}/admin/state`), 404)).message).toMatch(/own address/);
  });

  it('the override header needs routing.overrideToken by default; the token never goes upstream; overridesOpen opens it', async () => {
    const body = bodyWithUserText('openai-chat', ACTION);
    const closed = await configured();
    const refused = await postJson(closed.url, CHAT_PATH['openai-chat'], body, { 'x-task-router-override': 'ANSWER' });
    expect(expectApiError('openai-chat', { status: refused.status, headers: headersOf(refused), body: await refused.text() }, 403).message).toMatch(/routing\.overrideToken/);
    const auto = await postJson(closed.url, CHAT_PATH['openai-chat'], body, { 'x-task-router-override': 'auto' });
    expect(auto.status).toBe(200);
    await auto.arrayBuffer();

    const token = 'override-token-9c4f2a71e5d8';
    const locked = await configured({ routing: { overrideToken: token } });
    const wrong = await postJson(locked.url, CHAT_PATH.anthropic, bodyWithUserText('anthropic', ACTION), { 'x-task-router-override': 'ANSWER', 'x-task-router-override-token': `${token}0` });
    expectApiError('anthropic', { status: wrong.status, headers: headersOf(wrong), body: await wrong.text() }, 403);
    const forced = await postJson(locked.url, CHAT_PATH.anthropic, bodyWithUserText('anthropic', ACTION), { 'x-task-router-override': 'ANSWER', 'x-task-router-override-token': token });
    expect(forced.status).toBe(200);
    expect(forced.headers.get('x-task-router-mode')).toBe('ANSWER');
    await forced.arrayBuffer();
    expect(upstream.last().headers['x-task-router-override-token']).toBeUndefined();
    expect(upstream.last().text).not.toContain(token);

    const open = await configured({ routing: { overridesOpen: true } });
    const free = await postJson(open.url, CHAT_PATH['openai-chat'], body, { 'x-task-router-override': 'ANSWER' });
    expect(free.headers.get('x-task-router-mode')).toBe('ANSWER');
    await free.arrayBuffer();
    expect(upstream.requests).toHaveLength(3);
  });

  it('JSON that is not an object: a chat route sends it on untouched (never "not valid JSON"); /router/outcomes and /admin/flags say what it is', async () => {
    const gateway = await configured({}, { ADMIN_TOKEN });
    for (const [text, kind] of [['42', 'a number'], ['"fix src/app.ts"', 'a string'], ['[1,2]', 'an array'], ['null', 'null'], ['true', 'a boolean']] as const) {
      for (const api of APIS) {
        const response = await postJson(gateway.url, CHAT_PATH[api], text);
        expect(response.status, `${api} ${text}`).toBe(200);
        expect(response.headers.get('x-task-router-mode')).toBeNull();
        await response.arrayBuffer();
        expect(upstream.last().text).toBe(text);
      }
      for (const [path, headers] of [['/router/outcomes', {}], ['/admin/flags', { authorization: `Bearer ${ADMIN_TOKEN}` }]] as const) {
        const response = await fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: text });
        const error = await expectRouterError(response, 400);
        expect(error.message, `${path} ${text}`).toMatch(new RegExp(`must be a JSON object.*got ${kind}$`));
        expect(error.message).not.toMatch(/not valid JSON/);
      }
    }
    expect(upstream.requests).toHaveLength(5 * APIS.length);
  });
});
