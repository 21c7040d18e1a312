/**
 * POST /router/classify answers the decision for a body without calling the upstream: plain text, or a
 * chat body in any of the three APIs' shapes, read exactly as the chat routes read it.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/app.js';
import { DecisionSchema } from '../../src/index.js';
import { ROOT } from '../support/config-file.js';
import { apiReply, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { scrape, series, startConfigured, total } from '../support/running.js';
import { APIS, bodyWithUserText, postJson } from './clients.js';

let dir: string;
let upstream: FakeUpstream;
let gateway: RunningGateway;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-classify-'));
  upstream = await startFakeUpstream(apiReply('ok'));
  gateway = await startConfigured(dir, { upstream: { url: upstream.url } });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

async function classify(body: unknown): Promise<{ status: number; json: Record<string, unknown> & { mode?: string; step?: string; route?: string; stripped?: string[]; error?: { message: string; details?: string[] } } }> {
  const response = await postJson(gateway.url, '/router/classify', body);
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe('POST /router/classify', () => {
  it('classifies {"text"} and never calls the upstream', async () => {
    const action = await classify({ text: 'fix the failing tests in src/app.ts' });
    expect(action.status).toBe(200);
    expect(action.json).toMatchObject({ mode: 'ACTION', route: 'action', routing: 'hard', stripped: [] });
    // The classifier's own decision, whole, plus how the gateway would apply it.
    expect(DecisionSchema.safeParse(action.json).success).toBe(true);
    expect((await classify({ text: 'what is a race condition?' })).json).toMatchObject({ mode: 'ANSWER', route: 'answer', step: 'question' });
    expect(upstream.requests).toHaveLength(0);
  });

  it.each(APIS)('reads a %s chat body as the chat route would', async (api) => {
    const body = bodyWithUserText(api, 'deploy the staging branch to prod');
    const { status, json } = await classify(body);
    expect(status).toBe(200);
    expect(json.mode).toBe('ACTION');
    // The same body sent to the chat route gets the same decision.
    const paths = { 'openai-chat': '/v1/chat/completions', anthropic: '/v1/messages', 'openai-responses': '/v1/responses' } as const;
    const routed = await postJson(gateway.url, paths[api], body);
    await routed.arrayBuffer();
    expect(routed.headers.get('x-task-router-mode')).toBe(json.mode);
    expect(routed.headers.get('x-task-router-step')).toBe(json.step);
  });

  it('settles an unsure decision as the chat route does (routing.onUnsure), and says so', async () => {
    const candidates = ['tell me about the latest postgres version', 'the build thing from yesterday', 'can you look into the login flow', 'server status', 'what about the invoices', 'my notes', 'the report', 'tell me about the latest node release'];
    const text = candidates.find((candidate) => gateway.runtime.snapshot().classifier.classify(candidate).unsure);
    if (text === undefined) throw new Error('none of the candidate texts is unsure under the shipped weights: add one that is');
    const { json } = await classify({ text });
    const routed = await postJson(gateway.url, '/v1/chat/completions', bodyWithUserText('openai-chat', text));
    await routed.arrayBuffer();
    expect(json).toMatchObject({ unsure: true, unsurePolicy: 'soft', route: 'soft_router', routing: 'soft' });
    expect([routed.headers.get('x-task-router-route'), routed.headers.get('x-task-router-routing')]).toEqual([json.route, json.routing]);
  });

  it('reads a body labelled charset=utf8, as the chat routes do', async () => {
    const response = await postJson(gateway.url, '/router/classify', { text: 'fix the failing tests in src/app.ts' }, { 'content-type': 'application/json; charset=utf8' });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ mode: 'ACTION' });
  });

  it('reads the conversation: a follow-up to an offer takes the offer’s route', async () => {
    const { json } = await classify({ messages: [
      { role: 'user', content: 'the staging db is full' },
      { role: 'assistant', content: 'Want me to delete the old snapshots?' },
      { role: 'user', content: 'yes please' },
    ] });
    expect(json).toMatchObject({ mode: 'ACTION', step: 'context', followed: 'offer' });
  });

  it('strips agent scaffolding and says what it stripped', async () => {
    const fixture = JSON.parse(await readFile(join(ROOT, 'test/fixtures/agents/claude-code-question.json'), 'utf8')) as { body: unknown };
    expect((await classify(fixture.body)).json).toMatchObject({ mode: 'ANSWER', stripped: ['system-reminder'] });
  });

  it('refuses what it cannot classify, saying what to send', async () => {
    const array = await classify([1, 2]);
    expect(array.status).toBe(400);
    expect(array.json.error?.message).toMatch(/JSON object/);
    const empty = await classify({ model: 'm' });
    expect(empty.status).toBe(400);
    expect(empty.json.error?.details?.join('\n')).toMatch(/"text".*"messages".*"input"/);
    const toolsOnly = await classify({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'done' }] }] });
    expect(toolsOnly.status).toBe(422);
    expect(toolsOnly.json.error?.message).toMatch(/no human text/);
    const badJson = await postJson(gateway.url, '/router/classify', '{"text": ');
    expect(badJson.status).toBe(400);
    expect(upstream.requests.filter((request) => request.path === '/router/classify')).toHaveLength(0);
  });

  // A chat route reads a user turn of blanks only as no human text (it is skipped, and the request goes
  // on with no decision): {"text"} holding only blanks is no text either, not an ANSWER.
  it('refuses {"text"} of blanks only as no human text, as the chat routes read such a turn', async () => {
    for (const text of ['   ', '\n\t \r\n', '\u00a0\u3000']) {
      const blank = await classify({ text });
      expect(blank.status, JSON.stringify(text)).toBe(422);
      expect(blank.json.error?.message).toMatch(/no human text/);
      const asChat = await classify({ messages: [{ role: 'user', content: text }] });
      expect(asChat.status, JSON.stringify(text)).toBe(422);
    }
  });

  it('is counted as its own kind, apart from routed decisions', async () => {
    const fresh = await startConfigured(dir, { upstream: { url: upstream.url } });
    try {
      const before = await scrape(fresh.url);
      expect(series(before, 'task_router_classify_only_total')).toEqual({ 'result=action': 0, 'result=answer': 0, 'result=invalid': 0, 'result=no_human_text': 0 });
      await postJson(fresh.url, '/router/classify', { text: 'run the migration' }).then((r) => r.arrayBuffer());
      await postJson(fresh.url, '/router/classify', { text: 'what is a mutex?' }).then((r) => r.arrayBuffer());
      await postJson(fresh.url, '/router/classify', { nothing: true }).then((r) => r.arrayBuffer());
      const after = await scrape(fresh.url);
      expect(series(after, 'task_router_classify_only_total')).toEqual({ 'result=action': 1, 'result=answer': 1, 'result=invalid': 1, 'result=no_human_text': 0 });
      expect(total(after, 'task_router_decisions_total')).toBe(0);
    } finally {
      await fresh.close();
    }
  });
});
