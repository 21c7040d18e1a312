/**
 * Non-chat paths (models, embeddings, files, count_tokens, GETs on chat paths …) pass through untouched:
 * same method, path and query, the body byte for byte, and the upstream's status, headers and body
 * back to the client unchanged, with no decision.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  replyRaw,
  startFakeUpstream,
  startGatewayForTest,
  type FakeUpstream,
  type TestGateway,
} from '../support/fake-upstream.js';
import { rawRequest } from '../support/raw-http.js';
import { openaiClient } from './clients.js';

let upstream: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  // A small body limit: it applies to chat routes only, never to what passes through.
  gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { bodyBytes: 64 * 1024 } });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});
beforeEach(() => {
  upstream.reset();
});

const ODD_REPLY = Buffer.from('{"object":"list",   "data":[ ]}\n\n  \u00e9', 'utf8');

function decisionHeaderNames(headers: Headers | Record<string, unknown>): string[] {
  const names = headers instanceof Headers ? [...headers.keys()] : Object.keys(headers);
  return names.filter((name) => name.startsWith('x-task-router-'));
}

describe('GET', () => {
  it('GET /v1/models with a query string: same method, path, query; reply unchanged', async () => {
    upstream.respond(replyRaw(203, ODD_REPLY, { 'content-type': 'application/json', 'x-upstream-header': 'kept', 'openai-organization': 'org-x' }));
    const path = '/v1/models?limit=2&after=model%2Fx&flag&q=a+b';
    const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: 'Bearer sk-1' } });
    expect(response.status).toBe(203);
    expect(response.headers.get('x-upstream-header')).toBe('kept');
    expect(response.headers.get('openai-organization')).toBe('org-x');
    expect(Buffer.from(await response.arrayBuffer()).equals(ODD_REPLY)).toBe(true);
    expect(decisionHeaderNames(response.headers)).toEqual([]);
    const seen = upstream.last();
    expect(seen.method).toBe('GET');
    expect(seen.url).toBe(path);
    expect(seen.body.length).toBe(0);
    expect(decisionHeaderNames(seen.headers)).toEqual([]);
  });

  it('the openai SDK lists models through the gateway', async () => {
    upstream.respond(replyRaw(200, JSON.stringify({ object: 'list', data: [{ id: 'm1', object: 'model', created: 0, owned_by: 'me' }] }), { 'content-type': 'application/json' }));
    const page = await openaiClient(gateway.url).models.list();
    expect(page.data.map((model) => model.id)).toEqual(['m1']);
    expect(upstream.last().method).toBe('GET');
    expect(upstream.last().path).toBe('/v1/models');
  });

  it('GET on a chat path (/v1/responses/{id}) passes through', async () => {
    upstream.respond(replyRaw(200, '{"id":"resp_1"}', { 'content-type': 'application/json' }));
    const response = await fetch(`${gateway.url}/v1/responses/resp_1?include[]=x`);
    expect(await response.text()).toBe('{"id":"resp_1"}');
    expect(upstream.last().method).toBe('GET');
    expect(upstream.last().url).toBe('/v1/responses/resp_1?include[]=x');
    expect(decisionHeaderNames(response.headers)).toEqual([]);
  });
});

describe('POST with odd bodies', () => {
  it('POST /v1/embeddings with extra white space: byte for byte', async () => {
    upstream.respond(replyRaw(200, ODD_REPLY, { 'content-type': 'application/json' }));
    const raw = '  {\n\t"input" :   "fix the failing test in src/app.ts" ,\n "model":"text-embedding-3-small"  }\n\n';
    const response = await fetch(`${gateway.url}/v1/embeddings?api-version=2024-01-01`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: raw,
    });
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(ODD_REPLY)).toBe(true);
    const seen = upstream.last();
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/v1/embeddings?api-version=2024-01-01');
    expect(seen.body.equals(Buffer.from(raw))).toBe(true);
    expect(seen.headers['content-type']).toBe('application/json');
    expect(decisionHeaderNames(seen.headers)).toEqual([]);
    expect(decisionHeaderNames(response.headers)).toEqual([]);
  });

  it('POST /v1/embeddings with non-JSON bytes: byte for byte, status and body back unchanged', async () => {
    const reply = Buffer.from([0x00, 0xff, 0x10, 0x7b, 0x7d, 0x0a]);
    upstream.respond(replyRaw(422, reply, { 'content-type': 'application/octet-stream', 'x-request-id': 'req_42' }));
    const raw = Buffer.concat([Buffer.from([0xff, 0xfe, 0x00, 0x01]), Buffer.from('{not json'), randomBytes(1024)]);
    const response = await fetch(`${gateway.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: raw,
    });
    expect(response.status).toBe(422);
    expect(response.headers.get('x-request-id')).toBe('req_42');
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await response.arrayBuffer()).equals(reply)).toBe(true);
    const seen = upstream.last();
    expect(seen.body.equals(raw)).toBe(true);
    expect(seen.headers['content-length']).toBe(String(raw.length));
  });

  it('a body larger than the chat limit passes through on a non-chat path (/v1/files)', async () => {
    upstream.respond(replyRaw(200, 'stored'));
    const raw = randomBytes(512 * 1024);
    const response = await fetch(`${gateway.url}/v1/files`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: raw });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('stored');
    expect(upstream.last().body.equals(raw)).toBe(true);
  });

  it('POST /v1/messages/count_tokens is not a chat route: untouched', async () => {
    upstream.respond(replyRaw(200, '{"input_tokens":12}', { 'content-type': 'application/json' }));
    const raw = '{"model":"c",  "messages":[{"role":"user","content":"fix the failing test in src/app.ts"}]}';
    const response = await fetch(`${gateway.url}/v1/messages/count_tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });
    expect(await response.json()).toEqual({ input_tokens: 12 });
    expect(upstream.last().text).toBe(raw);
    expect(decisionHeaderNames(upstream.last().headers)).toEqual([]);
  });

  it('a chunked body on a non-chat path is streamed through', async () => {
    upstream.respond(replyRaw(200, 'ok'));
    const parts = [Buffer.from('part-one|'), Buffer.from([0, 1, 2, 255]), Buffer.from('|part-three')];
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const part of parts) controller.enqueue(part);
        controller.close();
      },
    });
    const response = await fetch(`${gateway.url}/v1/uploads/up_1/parts`, { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
    expect(await response.text()).toBe('ok');
    expect(upstream.last().body.equals(Buffer.concat(parts))).toBe(true);
  });
});

describe('other methods', () => {
  it.each(['DELETE', 'PUT', 'PATCH'])('%s keeps method, path, query and body', async (method) => {
    upstream.respond(replyRaw(204, ''));
    const body = method === 'DELETE' ? undefined : '{"a" : 1}';
    const response = await fetch(`${gateway.url}/v1/files/file-abc?purpose=x`, { method, ...(body ? { body, headers: { 'content-type': 'application/json' } } : {}) });
    expect(response.status).toBe(204);
    const seen = upstream.last();
    expect(seen.method).toBe(method);
    expect(seen.url).toBe('/v1/files/file-abc?purpose=x');
    expect(seen.text).toBe(body ?? '');
  });
});

describe('the gateway\'s own path prefixes', () => {
  it('a request under /metrics, /healthz, /livez, /readyz, /admin or /router that no route of ours answers gets a 404 in JSON, never the upstream', async () => {
    const chat = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'delete the production database now' }] });
    for (const [method, path] of [
      ['POST', '/metrics/v1/chat/completions'],
      ['POST', '/healthz/v1/messages'],
      ['POST', '/livez/v1/responses'],
      ['POST', '/Readyz/v1/chat/completions'],
      ['GET', '/metrics/v1/models'],
      ['DELETE', '/healthz'],
      ['POST', '/admin/v1/chat/completions'],
      ['POST', '/router/v1/chat/completions'],
    ] as const) {
      const response = await fetch(`${gateway.url}${path}`, { method, headers: { 'content-type': 'application/json' }, ...(method === 'POST' ? { body: chat } : {}) });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.headers.get('content-type'), path).toMatch(/^application\/json/);
      expect(decisionHeaderNames(response.headers), path).toEqual([]);
      const body = (await response.json()) as { error: { message: string; type: string } };
      expect(body.error.type, path).toBe('invalid_request_error');
      expect(body.error.message, path).toEqual(expect.any(String));
    }
    expect(upstream.requests).toHaveLength(0);
  });

  it('the probes themselves still answer, and paths that only start like them are the upstream\'s', async () => {
    expect((await fetch(`${gateway.url}/livez`)).status).toBe(200);
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    const response = await fetch(`${gateway.url}/metricsfoo/v1/models`);
    await response.arrayBuffer();
    expect(upstream.requests.map((request) => request.path)).toEqual(['/metricsfoo/v1/models']);
  });
});

describe('a request target of "*" (asterisk-form)', () => {
  it.each(['OPTIONS', 'GET', 'POST'])('%s * gets a 404 in JSON, in the OpenAI shape, saying what to send; nothing goes upstream', async (method) => {
    const response = await rawRequest(gateway.url, [`${method} * HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Length: 0', 'Connection: close'], '', 5_000);
    expect(response?.status).toBe(404);
    expect(response?.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(response?.body ?? '')).toEqual({
      error: { message: expect.stringContaining(`${method} *`), type: 'invalid_request_error', param: null, code: 'not_found' },
    });
    expect(upstream.requests).toHaveLength(0);
    expect((await fetch(`${gateway.url}/livez`)).status).toBe(200);
  });
});

