import { describe, expect, it } from 'vitest';
import { classifyRequest, createClassifier, formatForPath, readHumanTurns, routeRequest, STRATEGIES, type BodyBytes, type JsonObject, type RoutingState } from '../../src/index.js';
import { loadPrompts } from '../../middleware/prompts.js';

const prompts = await loadPrompts();
const classifier = createClassifier();

function routed(path: string, body: JsonObject, strategy: RoutingState['strategy'], failure: 'DEBATE_FAILURE' | null = null) {
  const format = formatForPath(path);
  if (!format) throw new Error(`no format for ${path}`);
  const state: RoutingState = { classifier, prompts, strategy, hardRouting: true, configHash: 'test' };
  const human = readHumanTurns(state, format, body);
  if (!human) throw new Error('no human turn');
  const request = classifyRequest(state, format, body, human, null, null);
  const pending = failure ? { verdict: failure, trigger: 'consecutive_failures' as const, task: 'abc', stakes: 'high' as const, failures: 2, rejections: 0, delivered: false, at: 0 } : null;
  return routeRequest(state, request, { id: 'id', requestId: 'rid', session: null, failure: pending, tiebreak: null });
}

/** The body's pieces joined, after checking that its length is their length in bytes. */
function textOf(bytes: BodyBytes): string {
  const joined = Buffer.concat(bytes.chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk)));
  expect(joined.length).toBe(bytes.length);
  return joined.toString('utf8');
}

const ask = 'deploy the billing service to staging';
const bodies: [string, JsonObject][] = [
  ['/v1/chat/completions', { model: 'm', messages: [{ role: 'system', content: 'You are terse. «ünïcode» ✓ "quoted" \\ back\nslash' }, { role: 'user', content: ask }] }],
  ['/v1/chat/completions', { model: 'm', messages: [{ role: 'developer', content: [{ type: 'text', text: 'parts form' }] }, { role: 'user', content: [{ type: 'text', text: ask }] }], stream: true }],
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'why is the sky blue?' }], model: 'm' }],
  ['/v1/messages', { model: 'm', max_tokens: 10, system: 'client system', messages: [{ role: 'user', content: ask }] }],
  ['/v1/messages', { model: 'm', max_tokens: 10, system: [{ type: 'text', text: 'client part' }], messages: [{ role: 'user', content: ask }] }],
  ['/v1/responses', { model: 'm', instructions: 'client instructions', input: ask }],
];

describe('routeRequest: the upstream bytes', () => {
  it('are the routed body as JSON, for every format and strategy, with our prompt spliced in', () => {
    for (const strategy of STRATEGIES) {
      for (const [path, body] of bodies) {
        for (const failure of [null, 'DEBATE_FAILURE'] as const) {
          const result = routed(path, body, strategy, failure);
          expect(textOf(result.bytes)).toBe(JSON.stringify(result.body));
        }
      }
    }
  });

  it('are right when a client text spells the mark the splice uses', () => {
    const mark = '\u0000task-router:prompt\u0000';
    for (const text of [mark, `${mark}${mark}`, `\\u0000task-router:prompt\\u0000`]) {
      const result = routed('/v1/chat/completions', { model: 'm', messages: [{ role: 'system', content: text }, { role: 'user', content: `${ask} ${text}` }] }, 'prepend');
      expect(textOf(result.bytes)).toBe(JSON.stringify(result.body));
      expect(JSON.parse(textOf(result.bytes))).toEqual(result.body);
    }
  });
});

describe('formatForPath', () => {
  it('reads the API from the path\'s final segments, behind any prefix', () => {
    const formats = ['/v1/chat/completions', '/openai/v1/chat/completions/', '/v1/messages', '/anthropic/v1/messages', '/v1/responses', '/v1/models', '/v1/messages/count_tokens'].map((path) => formatForPath(path)?.name ?? null);
    expect(formats).toEqual(['openai-chat', 'openai-chat', 'anthropic', 'anthropic', 'openai-responses', null, null]);
  });

  it('a message added to an Assistants thread is no Anthropic request', () => {
    expect(formatForPath('/v1/threads/thread_abc123/messages')).toBeNull();
  });
});

describe('routeRequest: the debates reported are the debate prompts sent', () => {
  const risky = { model: 'm', messages: [{ role: 'user', content: 'drop the users table in the production database' }] };
  const format = formatForPath('/v1/chat/completions');

  it.each([true, false])('hard routing %s, with and without a failure debate or an escalation', (hardRouting) => {
    if (!format) throw new Error('no chat format');
    const state: RoutingState = { classifier, prompts, strategy: 'replace', hardRouting, configHash: 'test' };
    const human = readHumanTurns(state, format, risky);
    if (!human) throw new Error('no human turn');
    const request = classifyRequest(state, format, risky, human, null, null);
    expect(request.applied.debate.verdict).toBe('DEBATE_PLANNING');
    for (const verdict of [null, 'DEBATE_FAILURE', 'AUTO_ESCALATE'] as const) {
      const failure = verdict ? { verdict, trigger: 'consecutive_failures' as const, task: 'abc', stakes: 'high' as const, failures: 2, rejections: 0, delivered: false, at: 0 } : null;
      const out = routeRequest(state, request, { id: 'id', requestId: 'rid', session: null, failure, tiebreak: null });
      const system = String((out.body.messages as { content: string }[])[0]?.content);
      const sent = { planning: system.includes(prompts.debatePlanning), failure: system.includes(prompts.debateFailure), escalate: system.includes(prompts.escalate) };
      const reported = { planning: false, failure: false, escalate: false };
      for (const debate of out.debates) reported[debate.kind] = true;
      expect(reported, `${verdict} on route ${out.decision.route}`).toEqual(sent);
      expect(out.headers['x-task-router-debate']?.includes('planning') ?? false).toBe(sent.planning);
    }
  });
});
