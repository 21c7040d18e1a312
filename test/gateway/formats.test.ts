/**
 * Every chat format × stream / non-stream × route, through the official SDKs: the upstream gets exactly
 * one system prompt, the right prompt file, in the right place; the SDK gets the upstream's answer; the
 * decision travels both ways with the same id (FIELD-NOTES 2: no format or mode may skip routing).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  apiReply,
  promptCopies,
  startFakeUpstream,
  startGatewayForTest,
  type ApiName,
  type FakeUpstream,
  type RecordedRequest,
  type TestGateway,
} from '../support/fake-upstream.js';
import { APIS, askWithSdk, systemOf, UUID } from './clients.js';

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
beforeEach(() => {
  upstream.reset();
});

interface Case {
  readonly name: string;
  readonly message: string;
  readonly mode: 'ANSWER' | 'ACTION';
  readonly route: 'answer' | 'action' | 'tool_specialist';
  /** The prompt the upstream must receive, from the prompt set. */
  readonly prompt: (p: TestGateway['prompts']) => string;
}

const CASES: readonly Case[] = [
  { name: 'ANSWER question', message: 'what is HPOS?', mode: 'ANSWER', route: 'answer', prompt: (p) => p.answer },
  { name: 'ACTION task', message: 'fix the failing test in src/app.ts', mode: 'ACTION', route: 'action', prompt: (p) => p.action },
  { name: 'trivial command', message: 'pwd', mode: 'ACTION', route: 'tool_specialist', prompt: (p) => p.toolSpecialist },
  {
    name: 'risky ACTION (planning debate)',
    message: 'drop the users table in prod',
    mode: 'ACTION',
    route: 'action',
    prompt: (p) => `${p.action}\n\n${p.debatePlanning}`,
  },
];

function expectOneSystemPrompt(api: ApiName, body: RecordedRequest['json'], raw: string, prompt: string, message: string): void {
  if (api === 'openai-chat') {
    expect(body.messages[0]).toEqual({ role: 'system', content: prompt });
    const systems = body.messages.filter((m: { role: string }) => m.role === 'system' || m.role === 'developer');
    expect(systems).toHaveLength(1);
    expect(body.messages.at(-1)).toEqual({ role: 'user', content: message });
  } else if (api === 'anthropic') {
    expect(body.system).toBe(prompt);
    expect(body.messages).toEqual([{ role: 'user', content: message }]);
  } else {
    expect(body.instructions).toBe(prompt);
    expect(body.input).toBe(message);
  }
  expect(systemOf(api, body)).toBe(prompt);
  expect(promptCopies(raw, prompt)).toBe(1);
}

describe.each(APIS)('%s', (api) => {
  describe.each([false, true])('stream: %s', (stream) => {
    it.each(CASES)('$name → upstream gets the route prompt once, client gets the answer and the decision', async (c) => {
      const reply = `reply for ${api} ${stream ? 'stream' : 'json'}: ${c.route}`;
      upstream.respond(apiReply(reply));
      const result = await askWithSdk(api, gateway.url, c.message, stream);

      // The SDK got the upstream's answer, whole.
      expect(result.status).toBe(200);
      expect(result.text).toBe(reply);

      // Exactly one request reached the upstream, carrying our prompt once, first, in the format's place.
      expect(upstream.requests).toHaveLength(1);
      const seen = upstream.last();
      expect(seen.path).toBe(api === 'anthropic' ? '/v1/messages' : api === 'openai-responses' ? '/v1/responses' : '/v1/chat/completions');
      expect(seen.json.stream === true).toBe(stream);
      expectOneSystemPrompt(api, seen.json, seen.text, c.prompt(gateway.prompts), c.message);
      // The other route prompts are not there.
      const others = [gateway.prompts.answer, gateway.prompts.action, gateway.prompts.toolSpecialist, gateway.prompts.softRouter].filter(
        (p) => !c.prompt(gateway.prompts).includes(p),
      );
      for (const other of others) expect(promptCopies(seen.text, other)).toBe(0);
      // The body length the upstream got is the one it was told.
      expect(Number(seen.headers['content-length'])).toBe(seen.body.length);

      // The decision, to the client and to the upstream, is one and the same.
      const mode = result.headers.get('x-task-router-mode');
      const confidence = result.headers.get('x-task-router-confidence');
      const id = result.headers.get('x-task-router-decision-id');
      expect(mode).toBe(c.mode);
      expect(['STRONG', 'WEAK', 'NONE']).toContain(confidence);
      expect(id).toMatch(UUID);
      expect(result.headers.get('x-task-router-route')).toBe(c.route);
      expect(seen.headers['x-task-router-mode']).toBe(mode);
      expect(seen.headers['x-task-router-confidence']).toBe(confidence);
      expect(seen.headers['x-task-router-decision-id']).toBe(id);
      expect(seen.headers['x-task-router-route']).toBe(c.route);
      expect(seen.headers['x-task-router-routing']).toBe('hard');
    });
  });
});

describe('decision ids', () => {
  it('every request gets its own decision id', async () => {
    upstream.respond(apiReply('ok'));
    const first = await askWithSdk('openai-chat', gateway.url, 'what is HPOS?', false);
    const second = await askWithSdk('openai-chat', gateway.url, 'what is HPOS?', false);
    const a = first.headers.get('x-task-router-decision-id');
    const b = second.headers.get('x-task-router-decision-id');
    expect(a).toMatch(UUID);
    expect(b).toMatch(UUID);
    expect(a).not.toBe(b);
    expect(upstream.requests.map((r) => r.headers['x-task-router-decision-id'])).toEqual([a, b]);
  });
});

describe('concurrent requests', () => {
  it('40 requests in flight at once each get their own decision and their own prompt', async () => {
    upstream.respond(apiReply('ok', { delayMs: 10 }));
    const messages = ['what is HPOS?', 'fix the failing test in src/app.ts', 'pwd', 'explain closures in JavaScript'];
    const expected = [gateway.prompts.answer, gateway.prompts.action, gateway.prompts.toolSpecialist, gateway.prompts.answer];
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => askWithSdk(APIS[i % 3]!, gateway.url, `${messages[i % 4]}`, i % 2 === 0)),
    );
    expect(upstream.requests).toHaveLength(40);
    const ids = results.map((r) => r.headers.get('x-task-router-decision-id'));
    expect(new Set(ids).size).toBe(40);
    for (const seen of upstream.requests) {
      const id = seen.headers['x-task-router-decision-id'];
      const index = ids.indexOf(id as string);
      expect(index).toBeGreaterThanOrEqual(0);
      const api = APIS[index % 3]!;
      expect(systemOf(api, seen.json)).toBe(expected[index % 4]);
      expect(results[index]!.text).toBe('ok');
    }
  });
});

describe('soft routing (hard routing off)'
, () => {
  let soft: TestGateway;
  beforeAll(async () => {
    soft = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { hardRouting: false } });
  });
  afterAll(async () => {
    await soft?.close();
  });

  it.each(APIS)('%s: the soft-router prompt goes upstream, the decision is shadow', async (api) => {
    upstream.respond(apiReply('soft'));
    const result = await askWithSdk(api, soft.url, 'fix the failing test in src/app.ts', false);
    expect(result.text).toBe('soft');
    const seen = upstream.last();
    expect(systemOf(api, seen.json)).toBe(soft.prompts.softRouter);
    expect(promptCopies(seen.text, soft.prompts.softRouter)).toBe(1);
    expect(promptCopies(seen.text, soft.prompts.action)).toBe(0);
    // Classified in shadow: the mode is still ACTION, the route is the soft router.
    expect(result.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(result.headers.get('x-task-router-route')).toBe('soft_router');
    expect(result.headers.get('x-task-router-routing')).toBe('soft');
    expect(seen.headers['x-task-router-routing']).toBe('soft');
  });
});
