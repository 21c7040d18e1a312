/**
 * Fuzzing request handling over real HTTP: bodies of the three chat APIs with a wrong type in any field,
 * arbitrary JSON, content parts of unknown types, raw bytes, deep nesting and huge bodies (100k-message
 * arrays, timed too, are in http.fuzz.slow.test.ts). The property: every request is either forwarded
 * (the fake upstream saw it, the client got its answer) or refused with a clear 4xx in the API's own error shape (400 or 413; 415 for a charset other
 * than UTF-8); never a 5xx of ours, never a crash (an uncaught exception here fails the run).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiReply, startFakeUpstream, startGatewayForTest, type ApiName, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { APIS } from '../gateway/clients.js';
import { forwardedOrRefused as checkForwardedOrRefused } from './forwarded.js';

const BODY_BYTES = 2 * 1024 * 1024;

let upstream: FakeUpstream;
let gateway: TestGateway;
beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { bodyBytes: BODY_BYTES } });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Sends a body and checks the property; returns the status. */
const forwardedOrRefused = (api: ApiName, body: string | Uint8Array, contentType?: string): Promise<number> =>
  checkForwardedOrRefused(gateway.url, upstream, api, body, contentType);

/** A valid request body of each API, with a system prompt, parts, tools and a tool turn to mutate. */
function baseBody(api: ApiName): Record<string, Json> {
  if (api === 'anthropic') {
    return {
      model: 'claude-test', max_tokens: 64, stream: false,
      system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral' } }],
      tools: [{ name: 'run', description: 'runs', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'fix the failing test in src/app.ts' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run', input: { cmd: 'ls' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }, { type: 'text', text: 'now deploy it' }] },
      ],
    };
  }
  if (api === 'openai-responses') {
    return {
      model: 'gpt-test', instructions: 'be brief', stream: false,
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'fix the failing test in src/app.ts' }] },
        { type: 'function_call', call_id: 'c1', name: 'run', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'ok' },
        { type: 'message', role: 'user', content: 'now deploy it' },
      ],
    };
  }
  return {
    model: 'gpt-test', stream: false,
    tools: [{ type: 'function', function: { name: 'run', parameters: { type: 'object' } } }],
    messages: [
      { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
      { role: 'user', content: 'fix the failing test in src/app.ts' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'run', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
      { role: 'user', content: [{ type: 'text', text: 'now deploy it' }, { type: 'image_url', image_url: { url: 'data:,' } }] },
    ],
  };
}

type Path = readonly (string | number)[];

/** Every path in a JSON value, the root excluded. */
function pathsOf(value: Json, prefix: Path = []): Path[] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, Json][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])]);
}

/** A copy of `value` with the value at `path` replaced. */
function replaced(value: Json, path: Path, next: Json): Json {
  if (path.length === 0) return next;
  const [key, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, index) => (index === key ? replaced(item, rest, next) : item));
  if (value !== null && typeof value === 'object') {
    const copy: { [key: string]: Json } = {};
    for (const [name, child] of Object.entries(value)) Object.defineProperty(copy, name, { value: name === key ? replaced(child, rest, next) : child, enumerable: true, writable: true, configurable: true });
    return copy;
  }
  return value;
}

const jsonValue = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>;

describe('request handling fuzz (real gateway, real fake upstream)', () => {
  it.each(APIS)('%s: a wrong type in any field is forwarded or refused in the API shape', async (api) => {
    const base = baseBody(api);
    const paths = pathsOf(base);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...paths), jsonValue), { minLength: 1, maxLength: 3 }), async (changes) => {
        let body: Json = base;
        for (const [path, value] of changes) body = replaced(body, path, value);
        await forwardedOrRefused(api, JSON.stringify(body));
      }),
      { numRuns: 120 },
    );
  });

  it.each(APIS)('%s: any JSON document at all', async (api) => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 4 }), async (body) => {
        await forwardedOrRefused(api, JSON.stringify(body));
      }),
      { numRuns: 60 },
    );
  });

  it.each(APIS)('%s: content parts of unknown types, with and without text', async (api) => {
    const part = fc.record(
      { type: fc.oneof(fc.string(), fc.constantFrom('text', 'input_text', 'image', 'audio', 'file', 'tool_result', 'refusal', '__proto__')), text: jsonValue, data: jsonValue },
      { requiredKeys: ['type'] },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(part, { maxLength: 6 }), async (parts) => {
        const body = api === 'openai-responses'
          ? { model: 'm', input: [{ role: 'user', content: parts }] }
          : { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: parts }] };
        await forwardedOrRefused(api, JSON.stringify(body));
      }),
      { numRuns: 60 },
    );
  });

  it('raw bytes of any kind, under any content type', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...APIS),
        fc.oneof(fc.string({ unit: 'binary' }), fc.uint8Array({ maxLength: 256 })),
        fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1'),
        async (api, body, contentType) => {
          await forwardedOrRefused(api, body, contentType);
        },
      ),
      { numRuns: 150 },
    );
  });

  it.each(APIS)('%s: deep nesting (to 200k levels) in metadata, content or the whole body', async (api) => {
    const deep = (depth: number, leaf: string) => `${'{"a":['.repeat(depth)}${leaf}${']}'.repeat(depth)}`;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(10, 1_000, 20_000, 200_000), fc.constantFrom('metadata', 'content', 'body'), async (depth, where) => {
        const nested = deep(depth, '"fix the failing test in src/app.ts"');
        const human = where === 'content' ? `[{"type":"text","text":"deploy it"},${nested}]` : '"fix the failing test in src/app.ts"';
        const turns = api === 'openai-responses' ? `"input":[{"role":"user","content":${human}}]` : `"messages":[{"role":"user","content":${human}}]`;
        const body = where === 'body' ? nested : `{"model":"m","max_tokens":8,"metadata":${where === 'metadata' ? nested : '{}'},${turns}}`;
        expect(await forwardedOrRefused(api, body)).toBe(200);
      }),
      { numRuns: 12 },
    );
  });

  it.each(APIS)('%s: huge bodies: just under the byte limit is forwarded, just over it is a 413', async (api) => {
    const shell = (text: string) => JSON.stringify(api === 'openai-responses' ? { model: 'm', input: text } : { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: text }] });
    const padding = BODY_BYTES - shell('').length;
    expect(await forwardedOrRefused(api, shell(`deploy it ${'é'.repeat(Math.floor((padding - 10) / 2))}`))).toBe(200);
    expect(await forwardedOrRefused(api, shell('x'.repeat(padding + 1)))).toBe(413);
  });
});
