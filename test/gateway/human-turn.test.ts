import { gatewayAndUpstream } from '../support/suite.js';
/**
 * The latest *human* turn decides (FIELD-NOTES 4, 5): tool results and tool-only turns are skipped so an
 * agent loop keeps the route of the task that started it; only text parts of multi-part content count;
 * a body with no human text at all goes upstream byte for byte, with no decision.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  apiReply,
  promptCopies,
  type ApiName,
  type FakeUpstream,
  type RecordedRequest,
  type TestGateway,
} from '../support/fake-upstream.js';
import { anthropicClient, CHAT_PATH, openaiClient, postJson, systemOf } from './clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const QUESTION = 'what is HPOS?';

let upstream: FakeUpstream;
let gateway: TestGateway;

gatewayAndUpstream((made) => ({ gateway, upstream } = made));
beforeEach(() => {
  upstream.reset();
  upstream.respond(apiReply('ok'));
});

async function route(api: ApiName, body: unknown): Promise<{ response: Response; seen: RecordedRequest }> {
  const response = await postJson(gateway.url, CHAT_PATH[api], body);
  expect(response.status).toBe(200);
  await response.arrayBuffer();
  expect(upstream.requests).toHaveLength(1);
  return { response, seen: upstream.last() };
}

function expectRoute(api: ApiName, result: { response: Response; seen: RecordedRequest }, mode: 'ANSWER' | 'ACTION'): void {
  const prompt = mode === 'ACTION' ? gateway.prompts.action : gateway.prompts.answer;
  expect(result.response.headers.get('x-task-router-mode')).toBe(mode);
  expect(result.seen.headers['x-task-router-mode']).toBe(mode);
  expect(systemOf(api, result.seen.json)).toBe(prompt);
  expect(promptCopies(result.seen.text, prompt)).toBe(1);
}

describe('OpenAI chat: tool loops', () => {
  const toolLoop = (toolOutput: string) => ({
    model: 'm',
    messages: [
      { role: 'user', content: ACTION },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/app.ts"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: toolOutput },
    ],
  });

  it('assistant tool_calls and tool messages after the user turn keep ACTION', async () => {
    const result = await route('openai-chat', toolLoop('export function add(a, b) { return a - b }'));
    expectRoute('openai-chat', result, 'ACTION');
    // The loop itself reaches the upstream intact, after our one system message.
    expect(result.seen.json.messages.slice(1)).toEqual(toolLoop('export function add(a, b) { return a - b }').messages);
  });

  it('a tool message that reads like a question does not flip the route', async () => {
    expectRoute('openai-chat', await route('openai-chat', toolLoop(QUESTION)), 'ACTION');
  });

  it('a question started loop stays ANSWER though a tool message reads like a task', async () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'search', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c', content: ACTION },
      ],
    };
    expectRoute('openai-chat', await route('openai-chat', body), 'ANSWER');
  });

  it('through the openai SDK, a tool loop keeps ACTION', async () => {
    const client = openaiClient(gateway.url);
    const { response } = await client.chat.completions
      .create({
        model: 'gpt-test',
        messages: [
          { role: 'user', content: ACTION },
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'run_tests', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'call_9', content: QUESTION },
        ],
      })
      .withResponse();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(systemOf('openai-chat', upstream.last().json)).toBe(gateway.prompts.action);
  });
});

describe('Anthropic: tool_result turns', () => {
  const loop = (toolResult: unknown) => ({
    model: 'c',
    max_tokens: 8,
    messages: [
      { role: 'user', content: ACTION },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/app.ts' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: toolResult }] },
    ],
  });

  it('user turns of only tool_result blocks are skipped', async () => {
    expectRoute('anthropic', await route('anthropic', loop('file contents')), 'ACTION');
  });

  it('a tool_result containing "what is HPOS?" (string) does not flip the route', async () => {
    expectRoute('anthropic', await route('anthropic', loop(QUESTION)), 'ACTION');
  });

  it('a tool_result containing "what is HPOS?" (text blocks) does not flip the route', async () => {
    const result = await route('anthropic', loop([{ type: 'text', text: QUESTION }]));
    expectRoute('anthropic', result, 'ACTION');
    expect(result.seen.json.messages).toEqual(loop([{ type: 'text', text: QUESTION }]).messages);
  });

  it('a question-started loop stays ANSWER though a tool_result reads like a task', async () => {
    const body = {
      model: 'c',
      max_tokens: 8,
      messages: [
        { role: 'user', content: [{ type: 'text', text: QUESTION }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'search', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'text', text: ACTION }] }] },
      ],
    };
    expectRoute('anthropic', await route('anthropic', body), 'ANSWER');
  });

  it('through the anthropic SDK, a tool loop keeps ACTION', async () => {
    const client = anthropicClient(gateway.url);
    const { response } = await client.messages
      .create({
        model: 'claude-test',
        max_tokens: 16,
        messages: [
          { role: 'user', content: ACTION },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'bash', input: { command: 'npm test' } }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: QUESTION }] },
        ],
      })
      .withResponse();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(upstream.last().json.system).toBe(gateway.prompts.action);
  });
});

describe('multi-part content', () => {
  it('OpenAI chat: text + image parts, the image URL is not read as a reference', async () => {
    const content = [
      { type: 'text', text: QUESTION },
      { type: 'image_url', image_url: { url: 'https://example.com/screens/src/app.ts.png' } },
    ];
    const result = await route('openai-chat', { model: 'm', messages: [{ role: 'user', content }] });
    expectRoute('openai-chat', result, 'ANSWER');
    expect(result.seen.json.messages[1]).toEqual({ role: 'user', content });
  });

  it('OpenAI chat: an image first, the task text second → ACTION', async () => {
    const content = [
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB' } },
      { type: 'text', text: ACTION },
    ];
    expectRoute('openai-chat', await route('openai-chat', { model: 'm', messages: [{ role: 'user', content }] }), 'ACTION');
  });

  it('Anthropic: image block + text block', async () => {
    const content = [
      { type: 'image', source: { type: 'url', url: 'https://example.com/src/app.ts.png' } },
      { type: 'text', text: QUESTION },
    ];
    const result = await route('anthropic', { model: 'c', max_tokens: 8, messages: [{ role: 'user', content }] });
    expectRoute('anthropic', result, 'ANSWER');
    expect(result.seen.json.messages).toEqual([{ role: 'user', content }]);
  });

  it('Responses: input_text + input_image parts', async () => {
    const input = [
      { role: 'user', content: [{ type: 'input_text', text: ACTION }, { type: 'input_image', image_url: 'https://example.com/a.png' }] },
    ];
    const result = await route('openai-responses', { model: 'm', input });
    expectRoute('openai-responses', result, 'ACTION');
    expect(result.seen.json.input).toEqual(input);
  });
});

describe('OpenAI responses input', () => {
  it('`input` as a string', async () => {
    expectRoute('openai-responses', await route('openai-responses', { model: 'm', input: QUESTION }), 'ANSWER');
  });

  it('items with function_call / function_call_output after the user item keep the route', async () => {
    const input = [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: ACTION }] },
      { type: 'function_call', call_id: 'call_1', name: 'read_file', arguments: '{"path":"src/app.ts"}' },
      { type: 'function_call_output', call_id: 'call_1', output: QUESTION },
    ];
    const result = await route('openai-responses', { model: 'm', input });
    expectRoute('openai-responses', result, 'ACTION');
    expect(result.seen.json.input).toEqual(input);
  });

  it('through the openai SDK with input items', async () => {
    const client = openaiClient(gateway.url);
    const { response } = await client.responses
      .create({
        model: 'gpt-test',
        input: [
          { role: 'user', content: QUESTION },
          { type: 'function_call', call_id: 'call_2', name: 'search', arguments: '{}' },
          { type: 'function_call_output', call_id: 'call_2', output: ACTION },
        ],
      })
      .withResponse();
    expect(response.headers.get('x-task-router-mode')).toBe('ANSWER');
    expect(upstream.last().json.instructions).toBe(gateway.prompts.answer);
  });
});

describe('follow-ups', () => {
  it('a go-ahead after a planned task routes ACTION', async () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'user', content: ACTION },
        { role: 'assistant', content: 'I will change the assertion in src/app.ts. Shall I?' },
        { role: 'user', content: 'go ahead' },
      ],
    };
    expectRoute('openai-chat', await route('openai-chat', body), 'ACTION');
  });
});

describe('no human text: the body goes upstream byte for byte, with no decision', () => {
  // Odd but valid JSON: extra white space, unusual key order, escapes the gateway must not normalise.
  const cases: Record<string, { api: ApiName; raw: string }> = {
    'chat: system and assistant only': {
      api: 'openai-chat',
      raw: '{ "messages" : [ {"role":"system","content":"Be brief.\\u00e9"} ,\n {"role":"assistant","content":"Hello!"} ],\t"model":"m" }',
    },
    'chat: a user turn with only an image': {
      api: 'openai-chat',
      raw: '{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}  ',
    },
    'anthropic: the only user turn is tool_result blocks': {
      api: 'anthropic',
      raw: '{"model":"c","max_tokens":8,\n"system":"Mine.",\n"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"what is HPOS?"}]}]}',
    },
    'responses: only a function_call_output': {
      api: 'openai-responses',
      raw: '{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"fix the failing test in src/app.ts"}]}',
    },
    'responses: empty string input': { api: 'openai-responses', raw: '{"model":"m","input":"   "}' },
    'chat: the body is a JSON array': { api: 'openai-chat', raw: '[ {"role":"user","content":"fix src/app.ts"} ]' },
  };

  it.each(Object.keys(cases))('%s', async (name) => {
    const { api, raw } = cases[name]!;
    const response = await postJson(gateway.url, CHAT_PATH[api], raw, { 'x-task-router-mode': 'ANSWER' });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = upstream.last();
    expect(seen.body.equals(Buffer.from(raw, 'utf8'))).toBe(true);
    expect(Number(seen.headers['content-length'])).toBe(Buffer.byteLength(raw));
    expect(Object.keys(seen.headers).filter((h) => h.startsWith('x-task-router-'))).toEqual([]);
    expect([...response.headers.keys()].filter((h) => h.startsWith('x-task-router-'))).toEqual([]);
  });
});
