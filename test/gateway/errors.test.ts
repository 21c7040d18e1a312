/**
 * Errors in the API's own shape (SPEC §4): malformed JSON 400, body over the limit 413, upstream down
 * 502, upstream timeout 504; the upstream's own error statuses and bodies pass through unchanged; and
 * the official SDKs surface each as an APIError with the right status. (That a 504 comes at timeoutMs,
 * not when the upstream finally answers, is timed in errors.slow.test.ts.)
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import OpenAI, { APIError as OpenAIAPIError } from 'openai';
import {
  apiReply,
  closedPort,
  delayThen,
  replyJson,
  replyRaw,
  resetBeforeHeaders,
  startFakeUpstream,
  startGatewayForTest,
  type ApiName,
  type FakeUpstream,
  type TestGateway,
} from '../support/fake-upstream.js';
import { APIS, askWithSdk, bodyWithUserText, CHAT_PATH, postJson } from './clients.js';
import { expectErrorShape, INVALID, TIMEOUT, TOO_LARGE, UNREACHABLE } from './error-shapes.js';

const ACTION = 'fix the failing test in src/app.ts';

/** An SDK rejection carrying this status, of the SDK's own error class. */
async function expectSdkStatus(api: ApiName, call: Promise<unknown>, status: number): Promise<unknown> {
  const error = await call.then(
    () => {
      throw new Error(`expected the ${api} SDK to fail with ${status}`);
    },
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(api === 'anthropic' ? AnthropicAPIError : OpenAIAPIError);
  expect((error as { status?: number }).status).toBe(status);
  return error;
}

describe('client errors', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  beforeAll(async () => {
    upstream = await startFakeUpstream(apiReply('ok'));
    gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { bodyBytes: 4096 } });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  it.each(APIS)('%s: malformed JSON → 400 in the API shape, nothing upstream', async (api) => {
    const response = await postJson(gateway.url, CHAT_PATH[api], '{"model":"m","messages":[{"role":"user",');
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    const body = await response.json();
    expectErrorShape(api, body, INVALID);
    expect(JSON.stringify(body)).toMatch(/JSON/);
    expect(upstream.requests).toHaveLength(0);
  });

  it.each(APIS)('%s: body over limits.bodyBytes → 413 in the API shape, nothing upstream', async (api) => {
    const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, `${ACTION} ${'x'.repeat(8 * 1024)}`));
    expect(response.status).toBe(413);
    expectErrorShape(api, await response.json(), TOO_LARGE);
    expect(upstream.requests).toHaveLength(0);
  });

  it('a body within the limit is accepted', async () => {
    const body = bodyWithUserText('openai-chat', `${ACTION} ${'z'.repeat(3000)}`);
    expect(JSON.stringify(body).length).toBeLessThan(4096);
    const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], body);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(upstream.requests).toHaveLength(1);
  });

  it('a chunked body (no content-length) over the limit → 413 too', async () => {
    const json = JSON.stringify(bodyWithUserText('anthropic', `${ACTION} ${'x'.repeat(16 * 1024)}`));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < json.length; at += 1024) controller.enqueue(new TextEncoder().encode(json.slice(at, at + 1024)));
        controller.close();
      },
    });
    const response = await fetch(`${gateway.url}${CHAT_PATH.anthropic}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expectErrorShape('anthropic', await response.json(), TOO_LARGE);
    expect(upstream.requests).toHaveLength(0);
  });

  it('the connection stays usable after a 400 and a 413', async () => {
    const bad = await postJson(gateway.url, CHAT_PATH['openai-chat'], '{oops');
    expect(bad.status).toBe(400);
    await bad.arrayBuffer();
    const big = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', 'x'.repeat(10_000)));
    expect(big.status).toBe(413);
    await big.arrayBuffer();
    for (let i = 0; i < 3; i += 1) {
      const ok = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
      expect(ok.status).toBe(200);
      expect((await ok.json()).choices[0].message.content).toBe('ok');
    }
    expect(upstream.requests).toHaveLength(3);
  });

  it.each(APIS)('%s SDK: a body over the limit surfaces as a 413 error', async (api) => {
    await expectSdkStatus(api, askWithSdk(api, gateway.url, `${ACTION} ${'y'.repeat(8 * 1024)}`, false), 413);
    expect(upstream.requests).toHaveLength(0);
  });

  it.each(APIS)('%s SDK: a malformed body (corrupted on the wire) surfaces as a 400 error', async (api) => {
    const corrupt = async (url: string | URL | Request, init?: RequestInit) => fetch(url, { ...init, body: '{"model": oops' });
    const call = api === 'anthropic'
      ? new Anthropic({ apiKey: 'k', authToken: null, baseURL: gateway.url, maxRetries: 0, fetch: corrupt }).messages.create({
          model: 'c', max_tokens: 8, messages: [{ role: 'user', content: ACTION }],
        })
      : api === 'openai-chat'
        ? new OpenAI({ apiKey: 'k', baseURL: `${gateway.url}/v1`, maxRetries: 0, fetch: corrupt }).chat.completions.create({
            model: 'm', messages: [{ role: 'user', content: ACTION }],
          })
        : new OpenAI({ apiKey: 'k', baseURL: `${gateway.url}/v1`, maxRetries: 0, fetch: corrupt }).responses.create({ model: 'm', input: ACTION });
    await expectSdkStatus(api, call, 400);
  });
});

describe('upstream unreachable → 502', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGatewayForTest({ upstreamUrl: `http://127.0.0.1:${await closedPort()}` });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it.each(APIS)('%s: fetch gets 502 in the API shape', async (api) => {
    const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION));
    expect(response.status).toBe(502);
    const body = await response.json();
    expectErrorShape(api, body, UNREACHABLE);
    expect(JSON.stringify(body)).toContain('ECONNREFUSED');
  });

  it.each(APIS)('%s SDK (stream and not): 502 error', async (api) => {
    await expectSdkStatus(api, askWithSdk(api, gateway.url, ACTION, false), 502);
    await expectSdkStatus(api, askWithSdk(api, gateway.url, ACTION, true), 502);
  });

  it('a non-chat path gets 502 in the OpenAI shape', async () => {
    const response = await fetch(`${gateway.url}/v1/models`);
    expect(response.status).toBe(502);
    expectErrorShape(null, await response.json(), UNREACHABLE);
  });
});

describe('errors on the other endpoints of each API come in that API\'s shape', () => {
  let unreachable: TestGateway;
  let slow: FakeUpstream;
  let timingOut: TestGateway;
  beforeAll(async () => {
    unreachable = await startGatewayForTest({ upstreamUrl: `http://127.0.0.1:${await closedPort()}` });
    slow = await startFakeUpstream(delayThen(2_000, replyJson(200, {})));
    timingOut = await startGatewayForTest({ upstreamUrl: slow.url, overrides: { timeoutMs: 200 } });
  });
  afterAll(async () => {
    await unreachable?.close();
    await timingOut?.close();
    await slow?.close();
  });

  const COUNT = { model: 'm', messages: [{ role: 'user' as const, content: ACTION }] };

  it.each([
    ['POST', '/v1/messages/count_tokens', 'anthropic'],
    ['POST', '/v1/messages/batches', 'anthropic'],
    ['GET', '/v1/messages/batches/msgbatch_01', 'anthropic'],
    ['GET', '/v1/messages/batches/msgbatch_01/results', 'anthropic'],
    ['POST', '/v1/messages/batches/msgbatch_01/cancel', 'anthropic'],
    ['POST', '/v1/threads/thread_1/messages', null],
    ['GET', '/v1/chat/completions/chatcmpl_1/messages', null],
    ['POST', '/v1/embeddings', null],
  ] as const)('%s %s: 502 in the %s shape', async (method, path, api) => {
    const response = await fetch(`${unreachable.url}${path}`, method === 'POST' ? { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(COUNT) } : { method });
    expect(response.status).toBe(502);
    expectErrorShape(api, await response.json(), UNREACHABLE);
  });

  it('the Anthropic SDK reads a 502 on count_tokens and a 504 on a batch as Anthropic errors', async () => {
    const counted = await expectSdkStatus('anthropic', new Anthropic({ apiKey: 'k', baseURL: unreachable.url, maxRetries: 0 }).messages.countTokens(COUNT), 502);
    expectErrorShape('anthropic', (counted as AnthropicAPIError).error, UNREACHABLE);
    const batch = await expectSdkStatus('anthropic', new Anthropic({ apiKey: 'k', baseURL: timingOut.url, maxRetries: 0 }).messages.batches.retrieve('msgbatch_01'), 504);
    expectErrorShape('anthropic', (batch as AnthropicAPIError).error, TIMEOUT);
  });

  it('on a path both APIs serve (GET /v1/models), a request naming anthropic-version gets Anthropic\'s shape, others OpenAI\'s', async () => {
    const listed = await expectSdkStatus('anthropic', new Anthropic({ apiKey: 'k', baseURL: unreachable.url, maxRetries: 0 }).models.list(), 502);
    expectErrorShape('anthropic', (listed as AnthropicAPIError).error, UNREACHABLE);
    const plain = await fetch(`${unreachable.url}/v1/models`);
    expect(plain.status).toBe(502);
    expectErrorShape(null, await plain.json(), UNREACHABLE);
  });
});

describe('upstream resets before headers → 502', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  beforeAll(async () => {
    upstream = await startFakeUpstream(resetBeforeHeaders());
    gateway = await startGatewayForTest({ upstreamUrl: upstream.url });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  it.each(APIS)('%s', async (api) => {
    const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION, { stream: true }));
    expect(response.status).toBe(502);
    expectErrorShape(api, await response.json(), UNREACHABLE);
    await expectSdkStatus(api, askWithSdk(api, gateway.url, ACTION, false), 502);
  });
});

describe('upstream slower than timeoutMs → 504', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  const timeoutMs = 300;
  beforeAll(async () => {
    upstream = await startFakeUpstream(delayThen(2_000, apiReply('too late')));
    gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { timeoutMs } });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });
  beforeEach(() => upstream.reset());

  it.each(APIS)('%s SDK (stream and not): 504 error', async (api) => {
    await expectSdkStatus(api, askWithSdk(api, gateway.url, ACTION, false), 504);
    await expectSdkStatus(api, askWithSdk(api, gateway.url, ACTION, true), 504);
  });

  it('an upstream that answers within the timeout is not cut', async () => {
    upstream.respondOnce(delayThen(100, apiReply('in time')));
    const result = await askWithSdk('openai-chat', gateway.url, ACTION, false);
    expect(result.text).toBe('in time');
  });

  it('the timeout covers headers only: a slow stream after quick headers is not cut', async () => {
    upstream.respondOnce(apiReply('slow but steady stream', { delayMs: 150 }));
    const result = await askWithSdk('anthropic', gateway.url, ACTION, true);
    expect(result.text).toBe('slow but steady stream');
  });
});

describe('upstream error statuses pass through unchanged', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  beforeAll(async () => {
    upstream = await startFakeUpstream();
    gateway = await startGatewayForTest({ upstreamUrl: upstream.url });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });
  afterEach(() => upstream.reset());

  const openai500 = { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } };
  const anthropic529 = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };
  const openai429 = { error: { message: 'Rate limit reached for requests', type: 'requests', param: null, code: 'rate_limit_exceeded' } };
  const anthropic429 = { type: 'error', error: { type: 'rate_limit_error', message: 'Number of request tokens has exceeded your per-minute rate limit' } };

  it.each(APIS)('%s: 500 / 529 with the body byte for byte, decision headers still there', async (api) => {
    const raw = JSON.stringify(api === 'anthropic' ? anthropic529 : openai500, null, 1);
    const status = api === 'anthropic' ? 529 : 500;
    upstream.respond(replyRaw(status, raw, { 'content-type': 'application/json', 'x-request-id': 'req_err' }));
    const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION));
    expect(response.status).toBe(status);
    expect(await response.text()).toBe(raw);
    expect(response.headers.get('x-request-id')).toBe('req_err');
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
  });

  it.each(APIS)('%s: 429 with retry-after and rate-limit headers unchanged', async (api) => {
    const raw = JSON.stringify(api === 'anthropic' ? anthropic429 : openai429);
    const limitHeaders: Record<string, string> = api === 'anthropic'
      ? { 'anthropic-ratelimit-requests-remaining': '0', 'anthropic-ratelimit-requests-reset': '2030-01-01T00:00:00Z' }
      : { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '1s' };
    upstream.respond(replyRaw(429, raw, { 'content-type': 'application/json', 'retry-after': '17', ...limitHeaders }));
    const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION, { stream: true }));
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('17');
    for (const [name, value] of Object.entries(limitHeaders)) expect(response.headers.get(name)).toBe(value);
    expect(await response.text()).toBe(raw);
  });

  it.each(APIS)('%s SDK: 500 and 429 surface with status, upstream message and retry-after', async (api) => {
    upstream.respond(replyJson(500, api === 'anthropic' ? { type: 'error', error: { type: 'api_error', message: 'Internal server error' } } : openai500));
    const serverError = await expectSdkStatus(api, askWithSdk(api, gateway.url, ACTION, false), 500);
    expect(String((serverError as Error).message)).toMatch(api === 'anthropic' ? /Internal server error/ : /The server had an error/);

    upstream.respond(replyJson(429, api === 'anthropic' ? anthropic429 : openai429, { 'retry-after': '17' }));
    const limited = await expectSdkStatus(api, askWithSdk(api, gateway.url, ACTION, true), 429);
    expect((limited as { headers?: Headers }).headers?.get('retry-after')).toBe('17');
    expect(String((limited as Error).message)).toMatch(/rate limit/i);
    // maxRetries: 0, so each call reached the upstream exactly once.
    expect(upstream.requests).toHaveLength(2);
  });
});
