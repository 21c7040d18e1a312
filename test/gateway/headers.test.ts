/**
 * Headers: the client's decision headers are not trusted (ours replace them upstream), credentials
 * pass unchanged, the override header forces a route and is recorded, /healthz reports the config.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic, { APIError as AnthropicAPIError } from '@anthropic-ai/sdk';
import { APIError as OpenAIAPIError } from 'openai';
import {
  apiReply,
  promptCopies,
  replyJson,
  startFakeUpstream,
  startGatewayForTest,
  type FakeUpstream,
  type TestGateway,
} from '../support/fake-upstream.js';
import { ANTHROPIC_KEY, APIS, askWithSdk, bodyWithUserText, CHAT_PATH, OPENAI_KEY, postJson, systemOf, UUID } from './clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const QUESTION = 'what is HPOS?';
const OVERRIDE_TOKEN = 'override-token-for-header-tests';
/** A forcing override needs the configured token beside it. */
const forcing = (mode: string) => ({ 'x-task-router-override': mode, 'x-task-router-override-token': OVERRIDE_TOKEN });

let upstream: FakeUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { overrideToken: OVERRIDE_TOKEN } });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});
beforeEach(() => {
  upstream.reset();
  upstream.respond(apiReply('ok'));
});

describe('client decision headers are replaced by ours', () => {
  const forged = {
    'x-task-router-mode': 'ANSWER',
    'x-task-router-confidence': 'STRONG',
    'x-task-router-decision-id': '00000000-0000-4000-8000-000000000000',
    'x-task-router-route': 'answer',
    'x-task-router-step': 'question',
    'x-task-router-routing': 'soft',
    'x-task-router-something-else': 'forged',
  };

  it.each(APIS)('%s via SDK: forged ANSWER headers on an ACTION message', async (api) => {
    const result = await askWithSdk(api, gateway.url, ACTION, false, forged);
    const seen = upstream.last();
    expect(seen.headers['x-task-router-mode']).toBe('ACTION');
    expect(seen.headers['x-task-router-route']).toBe('action');
    expect(seen.headers['x-task-router-routing']).toBe('hard');
    expect(seen.headers['x-task-router-step']).toBe('triggers');
    expect(seen.headers['x-task-router-decision-id']).toMatch(UUID);
    expect(seen.headers['x-task-router-decision-id']).not.toBe(forged['x-task-router-decision-id']);
    expect(seen.headers['x-task-router-something-else']).toBeUndefined();
    expect(systemOf(api, seen.json)).toBe(gateway.prompts.action);
    expect(result.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(result.headers.get('x-task-router-decision-id')).toBe(seen.headers['x-task-router-decision-id']);
  });

  it('decision headers an upstream sends back are replaced by ours on the way to the client', async () => {
    upstream.respond(replyJson(200, { id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [] }, {
      'x-task-router-mode': 'ANSWER',
      'x-task-router-decision-id': 'upstream-id',
      'x-task-router-bogus': 'upstream',
    }));
    const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(response.headers.get('x-task-router-decision-id')).toBe(upstream.last().headers['x-task-router-decision-id']);
    expect(response.headers.get('x-task-router-bogus')).toBeNull();
  });

  it('forged decision headers and the override on a non-chat path do not reach the upstream', async () => {
    upstream.respond(replyJson(200, { object: 'list', data: [] }));
    const response = await fetch(`${gateway.url}/v1/models`, { headers: { 'x-task-router-mode': 'ACTION', 'x-task-router-route': 'action', 'x-task-router-override': 'ACTION' } });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(upstream.last().url).toBe('/v1/models');
    expect(Object.keys(upstream.last().headers).filter((name) => name.startsWith('x-task-router-'))).toEqual([]);
  });
});

describe('credentials reach the upstream unchanged', () => {
  it('openai SDK: Authorization: Bearer <key>', async () => {
    await askWithSdk('openai-chat', gateway.url, ACTION, false);
    expect(upstream.last().headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    await askWithSdk('openai-responses', gateway.url, ACTION, true);
    expect(upstream.last().headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
  });

  it('anthropic SDK: its credential headers arrive exactly as the SDK sent them', async () => {
    let sent: Headers | undefined;
    const client = new Anthropic({
      apiKey: ANTHROPIC_KEY,
      authToken: null,
      baseURL: gateway.url,
      maxRetries: 0,
      fetch: async (url: string | URL | Request, init?: RequestInit) => {
        sent = new Headers(init?.headers);
        return fetch(url, init);
      },
    });
    await client.messages.create({ model: 'claude-test', max_tokens: 8, messages: [{ role: 'user', content: ACTION }] });
    const seen = upstream.last();
    expect(sent).toBeDefined();
    // This SDK version sends the key as a bearer token or as x-api-key; whichever it sent must arrive.
    const credential = sent!.get('x-api-key') ?? sent!.get('authorization');
    expect(credential).toContain(ANTHROPIC_KEY);
    for (const name of ['authorization', 'x-api-key', 'anthropic-version', 'anthropic-beta']) {
      expect(seen.headers[name], name).toBe(sent!.get(name) ?? undefined);
    }
  });

  it('fetch: both kinds, odd casing and spacing of the value kept', async () => {
    const response = await postJson(gateway.url, CHAT_PATH.anthropic, bodyWithUserText('anthropic', ACTION), {
      Authorization: 'Bearer  tok_ABC.def=',
      'X-Api-Key': 'key-Mixed-Case-1',
      'anthropic-beta': 'prompt-caching-2024-07-31',
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = upstream.last();
    expect(seen.headers.authorization).toBe('Bearer  tok_ABC.def=');
    expect(seen.headers['x-api-key']).toBe('key-Mixed-Case-1');
    expect(seen.headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
  });

  it('non-chat paths keep credentials too', async () => {
    upstream.respond(replyJson(200, { object: 'list', data: [] }));
    const response = await fetch(`${gateway.url}/v1/models`, { headers: { authorization: 'Bearer sk-models' } });
    await response.arrayBuffer();
    expect(upstream.last().headers.authorization).toBe('Bearer sk-models');
  });
});

describe('override header x-task-router-override', () => {
  it.each(APIS)('%s: ANSWER forces the answer route on an ACTION message', async (api) => {
    const result = await askWithSdk(api, gateway.url, ACTION, false, forcing('ANSWER'));
    const seen = upstream.last();
    expect(result.headers.get('x-task-router-mode')).toBe('ANSWER');
    expect(result.headers.get('x-task-router-step')).toBe('override');
    expect(result.headers.get('x-task-router-route')).toBe('answer');
    expect(seen.headers['x-task-router-mode']).toBe('ANSWER');
    expect(seen.headers['x-task-router-step']).toBe('override');
    expect(systemOf(api, seen.json)).toBe(gateway.prompts.answer);
    expect(promptCopies(seen.text, gateway.prompts.action)).toBe(0);
    // The override and its token are ours to read, not the upstream's.
    expect(seen.headers['x-task-router-override']).toBeUndefined();
    expect(seen.headers['x-task-router-override-token']).toBeUndefined();
  });

  it.each(APIS)('%s: ACTION forces the action route on a question (streamed)', async (api) => {
    const result = await askWithSdk(api, gateway.url, QUESTION, true, forcing('ACTION'));
    expect(result.text).toBe('ok');
    const seen = upstream.last();
    expect(result.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(result.headers.get('x-task-router-step')).toBe('override');
    expect(seen.headers['x-task-router-step']).toBe('override');
    expect(systemOf(api, seen.json)).toBe(gateway.prompts.action);
  });

  it('lower case and padding are accepted', async () => {
    const result = await askWithSdk('openai-chat', gateway.url, ACTION, false, forcing('  answer '));
    expect(result.headers.get('x-task-router-mode')).toBe('ANSWER');
    expect(result.headers.get('x-task-router-step')).toBe('override');
  });

  it('auto leaves the classification alone', async () => {
    const action = await askWithSdk('openai-chat', gateway.url, ACTION, false, { 'x-task-router-override': 'auto' });
    expect(action.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(action.headers.get('x-task-router-step')).toBe('triggers');
    const question = await askWithSdk('anthropic', gateway.url, QUESTION, false, { 'x-task-router-override': 'AUTO' });
    expect(question.headers.get('x-task-router-mode')).toBe('ANSWER');
    expect(question.headers.get('x-task-router-step')).toBe('question');
    expect(upstream.last().headers['x-task-router-override']).toBeUndefined();
  });

  it.each(APIS)('%s: a forcing value without the token, or with a wrong one → 403 in the API shape; nothing reaches the upstream', async (api) => {
    for (const headers of [{ 'x-task-router-override': 'ANSWER' }, { ...forcing('ACTION'), 'x-task-router-override-token': `${OVERRIDE_TOKEN}x` }, { ...forcing('ANSWER'), 'x-task-router-override-token': '' }]) {
      const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, QUESTION), headers);
      expect(response.status).toBe(403);
      const body = await response.json();
      expect(JSON.stringify(body)).toContain('x-task-router-override-token');
      expect(JSON.stringify(body)).not.toContain(OVERRIDE_TOKEN);
    }
    expect(upstream.requests).toHaveLength(0);
  });

  it('an invalid value → 400 in the OpenAI shape; nothing reaches the upstream', async () => {
    for (const api of ['openai-chat', 'openai-responses'] as const) {
      const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION), { 'x-task-router-override': 'MAYBE' });
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body).toEqual({ error: { message: expect.stringContaining('x-task-router-override'), type: 'invalid_request_error', param: null, code: 'invalid_request' } });
    }
    expect(upstream.requests).toHaveLength(0);
  });

  it('an invalid value → 400 in the Anthropic shape', async () => {
    const response = await postJson(gateway.url, CHAT_PATH.anthropic, bodyWithUserText('anthropic', ACTION), { 'x-task-router-override': 'both' });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('x-task-router-override') } });
    expect(upstream.requests).toHaveLength(0);
  });

  it('the SDKs surface an invalid override as a 400 error', async () => {
    const openai = askWithSdk('openai-chat', gateway.url, ACTION, false, { 'x-task-router-override': 'nope' });
    await expect(openai).rejects.toBeInstanceOf(OpenAIAPIError);
    await expect(openai).rejects.toMatchObject({ status: 400 });
    const anthropic = askWithSdk('anthropic', gateway.url, ACTION, true, { 'x-task-router-override': 'nope' });
    await expect(anthropic).rejects.toBeInstanceOf(AnthropicAPIError);
    await expect(anthropic).rejects.toMatchObject({ status: 400 });
  });

  describe('with overrides disabled', () => {
    let locked: TestGateway;
    beforeAll(async () => {
      locked = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { allowOverride: false } });
    });
    afterAll(async () => {
      await locked?.close();
    });

    it('a forcing override → 400, auto is still fine', async () => {
      const refused = await postJson(locked.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION), { 'x-task-router-override': 'ANSWER' });
      expect(refused.status).toBe(400);
      expect((await refused.json()).error.message).toContain('disabled');
      expect(upstream.requests).toHaveLength(0);
      const auto = await postJson(locked.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION), { 'x-task-router-override': 'auto' });
      expect(auto.status).toBe(200);
      expect(auto.headers.get('x-task-router-mode')).toBe('ACTION');
      await auto.arrayBuffer();
    });
  });
});

describe('GET /healthz', () => {
  it('200 with configHash and hardRouting', async () => {
    const response = await fetch(`${gateway.url}/healthz`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/application\/json/);
    const body = await response.json();
    expect(body).toEqual({ status: 'ok', hardRouting: true, configHash: gateway.snapshot.configHash });
    expect(body.configHash).toMatch(/^[0-9a-f]{12}$/);
    // Answered by the gateway itself.
    expect(upstream.requests).toHaveLength(0);
  });

  it('reports hard routing off when it is off', async () => {
    const soft = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { hardRouting: false } });
    try {
      const body = await (await fetch(`${soft.url}/healthz`)).json();
      expect(body.hardRouting).toBe(false);
      expect(body.configHash).toBe(soft.snapshot.configHash);
    } finally {
      await soft.close();
    }
  });
});

describe("the upstream's Keep-Alive hint", () => {
  // Node's agent stops reusing a socket a second before the timeout=N the upstream announces; reused
  // past it, the upstream's close races the next request, which fails with ECONNRESET (a 502).
  it.each([
    ['timeout=1: every request on a new upstream connection', 'timeout=1', 3],
    ['timeout=5: the connection is reused', 'timeout=5', 1],
  ])('%s', async (_name, hint, connections) => {
    upstream.respond(replyJson(200, { ok: true }, { 'keep-alive': hint }));
    for (let i = 0; i < 3; i += 1) {
      const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
      expect(response.status).toBe(200);
      // Theirs describes their connection to us, never ours to the client.
      expect(response.headers.get('keep-alive')).not.toBe(hint);
      await response.arrayBuffer();
      // The agent takes the socket back once the response has ended.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(new Set(upstream.requests.map((request) => request.socket)).size).toBe(connections);
  });
});
