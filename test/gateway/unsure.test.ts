import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClassifier, defaultScorer, type ScorerData } from '../../src/index.js';
import { scorerDigest } from '../../src/scorer.js';
import { createTiebreaker } from '../../gateway/tiebreak.js';
import type { RoutingSnapshot } from '../../middleware/task-router.js';
import { apiReply, defaultSnapshot, delayThen, openaiChatCompletion, replyJson, startFakeUpstream, startGatewayForTest, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';

/** The shipped weights with a band over every score: every decision is unsure, whatever the message. */
function alwaysUnsure(): ScorerData {
  const { id: _id, ...rest } = defaultScorer as ScorerData;
  const data = { ...rest, band: [0, 1] as [number, number] };
  return { ...data, id: scorerDigest(data) } as ScorerData;
}

let upstream: FakeUpstream;
let judge: FakeUpstream;
let unsureSnapshot: RoutingSnapshot;
const open: TestGateway[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  judge = await startFakeUpstream(replyJson(200, openaiChatCompletion('ACTION')));
  const base = await defaultSnapshot();
  unsureSnapshot = { ...base, classifier: createClassifier({ scorer: alwaysUnsure(), now: () => performance.now() }) };
});
afterAll(async () => {
  await Promise.all(open.map((gateway) => gateway.close()));
  await upstream.close();
  await judge.close();
});

async function gatewayWith(snapshot: Partial<RoutingSnapshot>): Promise<TestGateway> {
  const gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { snapshot: { ...unsureSnapshot, ...snapshot } } });
  open.push(gateway);
  return gateway;
}

async function chat(gateway: TestGateway, text: string) {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: text }] }),
  });
  await response.arrayBuffer();
  const system = upstream.last().json.messages[0].content as string;
  return { response, system };
}

describe('routing.onUnsure under hard routing', () => {
  it('soft (the default): the request goes out with the soft-router prompt, marked soft', async () => {
    const gateway = await gatewayWith({});
    const { response, system } = await chat(gateway, 'refactor the billing module');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-task-router-route')).toBe('soft_router');
    expect(response.headers.get('x-task-router-routing')).toBe('soft');
    expect(system).toBe(gateway.prompts.softRouter);
  });

  it('answer and action force the route', async () => {
    const answer = await gatewayWith({ onUnsure: 'answer' });
    const forcedAnswer = await chat(answer, 'refactor the billing module');
    expect(forcedAnswer.response.headers.get('x-task-router-mode')).toBe('ANSWER');
    expect(forcedAnswer.system).toBe(answer.prompts.answer);
    const action = await gatewayWith({ onUnsure: 'action' });
    const forcedAction = await chat(action, 'what is a monad?');
    expect(forcedAction.response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(forcedAction.response.headers.get('x-task-router-routing')).toBe('hard');
  });

  it('tiebreak: the verdict decides, and a second request with the same text is answered from the cache', async () => {
    judge.reset();
    judge.respond(replyJson(200, openaiChatCompletion('ACTION')));
    const tiebreaker = createTiebreaker({ url: `${judge.url}/v1/chat/completions`, model: 'judge', apiKey: null, timeoutMs: 800, cacheSize: 10, prompt: 'Reply ANSWER or ACTION.' });
    const gateway = await gatewayWith({ onUnsure: 'tiebreak', tiebreaker });
    const first = await chat(gateway, 'what is a monad?');
    expect(first.response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(first.system.startsWith(gateway.prompts.action)).toBe(true);
    await chat(gateway, 'what is a monad?');
    expect(judge.requests).toHaveLength(1);
  });

  it('tiebreak: a slow judge is cut at its timeout and the request goes on with soft routing', async () => {
    judge.respond(delayThen(3_000, replyJson(200, openaiChatCompletion('ACTION'))));
    const tiebreaker = createTiebreaker({ url: `${judge.url}/v1/chat/completions`, model: 'judge', apiKey: null, timeoutMs: 100, cacheSize: 10, prompt: 'Reply ANSWER or ACTION.' });
    const gateway = await gatewayWith({ onUnsure: 'tiebreak', tiebreaker });
    const { response, system } = await chat(gateway, 'deploy the thing maybe');
    expect(response.status).toBe(200);
    expect(response.headers.get('x-task-router-routing')).toBe('soft');
    expect(system).toBe(gateway.prompts.softRouter);
  });

  it('a sure decision is not touched by the policy', async () => {
    const base = await defaultSnapshot();
    const gateway = await gatewayWith({ classifier: base.classifier, onUnsure: 'answer' });
    const { response } = await chat(gateway, 'pwd');
    expect(response.headers.get('x-task-router-route')).toBe('tool_specialist');
  });
});
