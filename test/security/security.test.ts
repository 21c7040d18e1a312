/**
 * Security properties of the gateway: tokens checked in constant time and never logged, no secret in
 * any log on an error path, no prototype pollution through JSON bodies, the override header inert when
 * disabled, and no client-sent decision header reaching the upstream on any path.
 * (headers.test.ts covers forged headers on routed requests, upstream echoes and non-chat paths, and the
 * basic disabled-override case; this file covers the rest.)
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { scratchAndUpstream } from '../support/suite.js';
import { tokenMatches } from '../../middleware/credentials.js';
import { createMetrics } from '../../gateway/metrics.js';
import { observe } from '../../gateway/observability.js';
import type { RoutingSnapshot } from '../../middleware/task-router.js';
import { STRATEGIES } from '../../src/index.js';
import {
  closedPort,
  defaultSnapshot,
  replySse,
  sseEvents,
  startGatewayForTest,
  type ApiName,
  type FakeUpstream,
} from '../support/fake-upstream.js';
import { capturedLog, startConfigured } from '../support/running.js';
import { APIS, CHAT_PATH, bodyWithUserText, postJson } from '../gateway/clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const ADMIN_TOKEN = 'admin-token-5f1c9e7a2b';
const METRICS_TOKEN = 'metrics-token-8d3a6c0e4f';
const WRONG_TOKENS = ['admin-token-5f1c9e7a2c', 'wrong-token-0a9b8c7d6e', ADMIN_TOKEN.slice(0, -1), `${ADMIN_TOKEN}x`, METRICS_TOKEN.toUpperCase()];
const CLIENT_KEYS = ['sk-live-abcdefghijklmnopqrstuvwx', 'sk-ant-api03-zyxwvutsrqponmlkjihg'];

let dir: string;
let upstream: FakeUpstream;
scratchAndUpstream('security', (made) => ({ dir, upstream } = made));

describe('admin and metrics tokens', () => {
  it('tokenMatches compares digests: any length, same prefix or not, never throws and only matches exactly', () => {
    expect(tokenMatches(ADMIN_TOKEN, ADMIN_TOKEN)).toBe(true);
    for (const wrong of [...WRONG_TOKENS, '', 'a', 'x'.repeat(10_000), `${ADMIN_TOKEN}\u0000`]) expect(tokenMatches(wrong, ADMIN_TOKEN)).toBe(false);
  });

  it('wrong and right tokens never appear in the log or in a response', async () => {
    const { log, lines } = capturedLog();
    const gateway = await startConfigured(dir, { upstream: { url: `http://127.0.0.1:${await closedPort()}` } }, { env: { ADMIN_TOKEN, METRICS_TOKEN }, log });
    const bodies: string[] = [];
    try {
      for (const token of [...WRONG_TOKENS, ADMIN_TOKEN, METRICS_TOKEN]) {
        for (const [method, path] of [['GET', '/admin/state'], ['POST', '/admin/flags'], ['GET', '/metrics']] as const) {
          const response = await fetch(`${gateway.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'x-request-id': 'req-1' }, ...(method === 'POST' ? { body: '{"hardRouting":true}' } : {}) });
          bodies.push(await response.text());
          const right = (path === '/metrics' ? METRICS_TOKEN : ADMIN_TOKEN) === token;
          expect(response.status).toBe(right ? 200 : 401);
        }
      }
      // An error path that logs: the upstream is unreachable.
      const failed = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION), { authorization: `Bearer ${CLIENT_KEYS[0]}`, 'x-api-key': CLIENT_KEYS[1] as string });
      expect(failed.status).toBe(502);
      bodies.push(await failed.text());
      await gateway.flushLogs();
    } finally {
      await gateway.close();
    }
    const logged = lines.join('');
    expect(logged).toMatch(/upstream failed/);
    for (const secret of [...WRONG_TOKENS, ADMIN_TOKEN, METRICS_TOKEN, ...CLIENT_KEYS]) {
      expect(logged).not.toContain(secret);
      for (const body of bodies) expect(body).not.toContain(secret);
    }
  });
});

/** A gateway whose hooks write the operational log into `lines`, on a given snapshot. */
async function loggedGateway(upstreamUrl: string, snapshot: RoutingSnapshot, lines: string[]) {
  const log = pino({ base: null }, new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } }));
  const observed = observe(createMetrics(), { dir: null, decisions: false, memory: false, preview: true, utcOffsetMinutes: 0, maxQueuedBytes: 1024, flushMs: 50 }, log);
  return startGatewayForTest({ upstreamUrl, overrides: { snapshot, hooks: observed.hooks, timeoutMs: 300, idleTimeoutMs: 300 } });
}

describe('no secret in any log on error paths', () => {
  const SECRET_TEXT = `deploy with key ${CLIENT_KEYS[0]} and password=hunter2hunter2`;

  it('a classifier failing with the message text in its error: the fallback log carries no secret', async () => {
    const base = await defaultSnapshot();
    const snapshot: RoutingSnapshot = { ...base, classifier: { ...base.classifier, classify: (text: string) => { throw new Error(`cannot classify "${text}"`); }, classifyTurns: (turns: { latest: string }) => { throw new Error(`cannot classify "${turns.latest}"`); } } };
    const lines: string[] = [];
    const gateway = await loggedGateway(upstream.url, snapshot, lines);
    try {
      const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', SECRET_TEXT), { authorization: `Bearer ${CLIENT_KEYS[1]}` });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    } finally {
      await gateway.close();
    }
    expect(lines.join('')).toMatch(/routing degraded/);
    for (const secret of [...CLIENT_KEYS, 'hunter2hunter2']) expect(lines.join('')).not.toContain(secret);
  });

  it.each([
    ['reset mid-stream', replySse(sseEvents('openai-chat', 'a b c'), { resetAfter: 1 })],
    ['never-ending stream (idle timeout)', replySse(sseEvents('openai-chat', 'a b c'), { neverEnd: true })],
    ['timeout before headers', (_req: unknown, _res: unknown) => undefined],
  ] as const)('upstream failure after routing (%s): the log names the failure, not the secrets', async (_name, behaviour) => {
    upstream.respond(behaviour);
    const lines: string[] = [];
    const gateway = await loggedGateway(upstream.url, await defaultSnapshot(), lines);
    try {
      const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', SECRET_TEXT, { stream: true }), { authorization: `Bearer ${CLIENT_KEYS[0]}`, 'x-api-key': CLIENT_KEYS[1] as string });
      await response.text().catch(() => '');
      await new Promise((resolve) => setTimeout(resolve, 400));
    } finally {
      await gateway.close();
    }
    expect(lines.join('')).toMatch(/upstream failed/);
    for (const secret of [...CLIENT_KEYS, 'hunter2hunter2']) expect(lines.join('')).not.toContain(secret);
  });
});

describe('no prototype pollution through JSON bodies', () => {
  const POISON = ['__proto__', 'constructor', 'prototype'];
  /** A JSON object text carrying every poison key (written as text: an object literal would not keep them). */
  const poisoned = (inner: string) => `{${POISON.map((key) => `"${key}":{"polluted":"yes","toString":"x","hasOwnProperty":1}`).join(',')},${inner}}`;

  function bodyText(api: ApiName): string {
    const part = poisoned(`"type":"${api === 'openai-responses' ? 'input_text' : 'text'}","text":"${ACTION}"`);
    if (api === 'anthropic') {
      return poisoned(`"model":"c","max_tokens":8,"system":[${poisoned('"type":"text","text":"client prompt","cache_control":{"type":"ephemeral"}')}],"messages":[${poisoned(`"role":"user","content":[${part}]`)}],"metadata":${poisoned('"user_id":"u"')}`);
    }
    if (api === 'openai-responses') {
      return poisoned(`"model":"m","instructions":"client prompt","input":[${poisoned(`"role":"user","content":[${part}]`)}],"metadata":${poisoned('"k":"v"')}`);
    }
    return poisoned(`"model":"m","messages":[${poisoned('"role":"system","content":[{"type":"text","text":"client prompt"}]')},${poisoned(`"role":"user","content":[${part}]`)}],"tools":[${poisoned('"type":"function"')}]`);
  }

  const prototypeKeys = () => Object.getOwnPropertyNames(Object.prototype).sort();

  it.each(STRATEGIES.flatMap((strategy) => APIS.map((api) => [api, strategy] as const)))('%s, strategy %s: forwarded, keys kept, Object.prototype untouched', async (api, strategy) => {
    const before = prototypeKeys();
    const gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { strategy } });
    try {
      const response = await postJson(gateway.url, CHAT_PATH[api], bodyText(api));
      expect(response.status).toBe(200);
      expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
      await response.arrayBuffer();
    } finally {
      await gateway.close();
    }
    expect(prototypeKeys()).toEqual(before);
    const probe: Record<string, unknown> = {};
    expect(probe.polluted).toBeUndefined();
    expect(typeof probe.toString).toBe('function');
    expect(typeof probe.hasOwnProperty).toBe('function');

    // The client's keys went upstream as data, at every level (they are the client's to send)...
    const sent = upstream.last().text;
    const received = JSON.parse(sent, (_key, value) => value);
    expect(Object.getPrototypeOf(received)).toBe(Object.prototype);
    for (const key of POISON) expect(sent).toContain(`"${key}":{"polluted":"yes"`);
    // ...and the objects the rewrite made itself carry none of them.
    const ours = api === 'anthropic' ? JSON.parse(sent).system[strategy === 'append' ? 1 : 0] : api === 'openai-chat' ? JSON.parse(sent).messages[0] : null;
    if (api === 'openai-chat') {
      expect(Object.keys(ours)).toEqual(['role', 'content']);
      const first = Array.isArray(ours.content) ? ours.content[strategy === 'append' ? ours.content.length - 1 : 0] : null;
      if (first) expect(Object.keys(first).sort()).toEqual(['text', 'type']);
    }
    if (api === 'anthropic') expect(Object.keys(ours).sort()).toEqual(strategy === 'replace' ? ['cache_control', 'text', 'type'] : ['text', 'type']);
    if (api === 'openai-responses') expect(typeof JSON.parse(sent).instructions).toBe('string');
  });
});

describe('the override header when overrides are disabled', () => {
  it.each(APIS)('%s: no spelling, casing, padding or repetition of a forcing value gets through', async (api) => {
    const gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { allowOverride: false } });
    try {
      for (const value of ['ANSWER', 'answer', ' Answer ', 'ACTION', 'action\t']) {
        const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION, { stream: true }), { 'X-Task-Router-Override': value });
        expect(response.status, value).toBe(400);
        expect(await response.text()).toMatch(/disabled/);
      }
      // Sent twice (a list), with auto first: still a forcing value.
      const { status } = await new Promise<{ status: number }>((resolve, reject) => {
        const body = JSON.stringify(bodyWithUserText(api, ACTION));
        const req = request(`${gateway.url}${CHAT_PATH[api]}`, { method: 'POST', headers: [['content-type', 'application/json'], ['x-task-router-override', 'auto'], ['x-task-router-override', 'ANSWER'], ['content-length', String(Buffer.byteLength(body))]].flat() as unknown as IncomingHttpHeaders }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        });
        req.on('error', reject);
        req.end(body);
      });
      expect(status).toBe(400);
      expect(upstream.requests).toHaveLength(0);
    } finally {
      await gateway.close();
    }
  });
});

describe('client headers cannot spoof the decision headers sent upstream', () => {
  const FORGED = { 'X-Task-Router-Mode': 'ANSWER', 'x-task-router-route': 'answer', 'X-TASK-ROUTER-CONFIDENCE': 'STRONG', 'x-task-router-decision-id': 'forged', 'x-task-router-routing': 'soft', 'x-task-router-step': 'override', 'x-task-router-anything': 'x' };
  const decisionHeadersOf = (headers: IncomingHttpHeaders) => Object.keys(headers).filter((name) => name.startsWith('x-task-router-'));

  it.each(APIS)('%s: a request with no human text (skipped) carries no x-task-router-* header upstream', async (api) => {
    const gateway = await startGatewayForTest({ upstreamUrl: upstream.url });
    try {
      const body = api === 'openai-responses' ? { model: 'm', input: [] } : { model: 'm', max_tokens: 8, messages: [{ role: 'assistant', content: 'hi' }] };
      const response = await postJson(gateway.url, CHAT_PATH[api], body, FORGED);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-task-router-mode')).toBeNull();
      await response.arrayBuffer();
      expect(decisionHeadersOf(upstream.last().headers)).toEqual([]);
    } finally {
      await gateway.close();
    }
  });

  it('a body that is not an object, and a rewrite that fell back to pass-through: no forged header upstream', async () => {
    const base = await defaultSnapshot();
    const broken: RoutingSnapshot = { ...base, classifier: { ...base.classifier, classify: () => { throw new Error('down'); }, classifyTurns: () => { throw new Error('down'); } }, prompts: new Proxy(base.prompts, { get: () => { throw new Error('no prompts'); } }) };
    const gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { snapshot: broken } });
    try {
      for (const body of ['[1,2,3]', JSON.stringify(bodyWithUserText('openai-chat', ACTION))]) {
        const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], body, FORGED);
        expect(response.status).toBe(200);
        await response.arrayBuffer();
        expect(decisionHeadersOf(upstream.last().headers)).toEqual([]);
        expect(upstream.last().text).toBe(body);
      }
    } finally {
      await gateway.close();
    }
  });

  it('on a routed request only our values arrive, once each, whatever casing or repetition the client used', async () => {
    const gateway = await startGatewayForTest({ upstreamUrl: upstream.url });
    try {
      const response = await postJson(gateway.url, CHAT_PATH.anthropic, bodyWithUserText('anthropic', ACTION), FORGED);
      await response.arrayBuffer();
      const seen = upstream.last();
      expect(seen.headers['x-task-router-mode']).toBe('ACTION');
      expect(seen.headers['x-task-router-decision-id']).toBe(response.headers.get('x-task-router-decision-id'));
      expect(seen.headers['x-task-router-anything']).toBeUndefined();
      const raw = seen.rawHeaders.filter((_, index) => index % 2 === 0).map((name) => name.toLowerCase()).filter((name) => name.startsWith('x-task-router-'));
      expect(new Set(raw).size).toBe(raw.length);
      expect(raw.sort()).toEqual(['x-task-router-confidence', 'x-task-router-decision-id', 'x-task-router-mode', 'x-task-router-route', 'x-task-router-routing', 'x-task-router-step']);
    } finally {
      await gateway.close();
    }
  });
});
