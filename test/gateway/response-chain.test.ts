/**
 * Responses API chains: a request that continues a stored response (`previous_response_id`) with tool
 * outputs only carries no human turn, and the upstream does not carry the first request's instructions
 * over. The gateway remembers how the chain's first request was routed, by the response id it read from
 * the upstream's answer (a response object or a stream, compressed or not), and routes the
 * continuation the same way.
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADER } from '../../src/index.js';
import { apiReply, openaiResponse, replySse, sseEvents, startFakeUpstream, startGatewayForTest, type Behaviour, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { openaiClient } from './clients.js';

let gateway: TestGateway;
let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { overridesOpen: true } });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

let next = 0;
/** A fresh response id per call: each chain in this file is its own. */
const freshId = () => `resp_chain${(next += 1)}x${Date.now().toString(36)}`;

/** A response object with `id`, as JSON, compressed by `encoding` when given. */
function responseObject(id: string, encoding?: 'gzip' | 'br' | 'deflate'): Behaviour {
  return (_req, res) => {
    const json = Buffer.from(JSON.stringify({ ...openaiResponse('ok'), id }));
    const body = encoding === 'gzip' ? zlib.gzipSync(json) : encoding === 'br' ? zlib.brotliCompressSync(json) : encoding === 'deflate' ? zlib.deflateSync(json) : json;
    res.writeHead(200, { 'content-type': 'application/json', ...(encoding ? { 'content-encoding': encoding } : {}) });
    res.end(body);
  };
}

/** A streamed response whose events carry `id`. */
const responseStream = (id: string): Behaviour => replySse(sseEvents('openai-responses', 'ok').map((event) => event.replaceAll('resp_fake', id)));

const TOOL_OUTPUT = [{ type: 'function_call_output' as const, call_id: 'call_1', output: '{"passed": 41, "failed": 1}' }];

async function continueChain(previous: string, headers: Record<string, string> = {}) {
  const { response } = await openaiClient(gateway.url, headers).responses.create({ model: 'gpt-test', previous_response_id: previous, input: TOOL_OUTPUT }).withResponse();
  return { headers: response.headers, sent: upstream.last().json };
}

describe('a Responses request continuing a chain with tool outputs only', () => {
  it('is routed as the request that started the chain, step after step', async () => {
    const [first, second] = [freshId(), freshId()];
    upstream.respondOnce(responseObject(first));
    const started = await openaiClient(gateway.url).responses.create({ model: 'gpt-test', input: 'fix the failing test in src/app.ts' }).withResponse();
    expect(started.data.id).toBe(first);
    expect(started.response.headers.get(HEADER.mode)).toBe('ACTION');

    upstream.respondOnce(responseObject(second));
    const step = await continueChain(first);
    expect(step.sent.instructions).toBe(gateway.prompts.action);
    expect(step.sent.input).toEqual(TOOL_OUTPUT);
    expect(step.headers.get(HEADER.mode)).toBe('ACTION');
    expect(step.headers.get(HEADER.route)).toBe('action');
    expect(step.headers.get(HEADER.step)).toBe(started.response.headers.get(HEADER.step));
    // A decision of its own, with the same route.
    expect(step.headers.get(HEADER.decisionId)).not.toBe(started.response.headers.get(HEADER.decisionId));

    // The continuation's own response id continues the chain.
    upstream.respondOnce(responseObject(freshId()));
    expect((await continueChain(second)).sent.instructions).toBe(gateway.prompts.action);
  });

  it('keeps an ANSWER chain an ANSWER', async () => {
    const first = freshId();
    upstream.respondOnce(responseObject(first));
    await openaiClient(gateway.url).responses.create({ model: 'gpt-test', input: 'what is a race condition?' });
    upstream.respondOnce(responseObject(freshId()));
    const step = await continueChain(first);
    expect(step.sent.instructions).toBe(gateway.prompts.answer);
    expect(step.headers.get(HEADER.mode)).toBe('ANSWER');
  });

  it('reads the id from a streamed first response', async () => {
    const first = freshId();
    upstream.respondOnce(responseStream(first));
    const stream = await openaiClient(gateway.url).responses.create({ model: 'gpt-test', input: 'fix the failing test in src/app.ts', stream: true });
    for await (const _event of stream) {
      // Read to the end, as a client does.
    }
    upstream.respondOnce(responseObject(freshId()));
    expect((await continueChain(first)).sent.instructions).toBe(gateway.prompts.action);
  });

  it.each(['gzip', 'br', 'deflate'] as const)('reads the id from a %s-compressed response', async (encoding) => {
    const first = freshId();
    upstream.respondOnce(responseObject(first, encoding));
    const started = await openaiClient(gateway.url).responses.create({ model: 'gpt-test', input: 'fix the failing test in src/app.ts' });
    expect(started.id).toBe(first);
    upstream.respondOnce(responseObject(freshId()));
    expect((await continueChain(first)).sent.instructions).toBe(gateway.prompts.action);
  });

  it('goes on unrouted when the chain was not seen starting, or its response was an error', async () => {
    upstream.respondOnce(responseObject(freshId()));
    const unknown = await continueChain('resp_never_seen_here');
    expect(unknown.sent.instructions).toBeUndefined();
    expect(unknown.headers.get(HEADER.mode)).toBeNull();

    const failed = freshId();
    upstream.respondOnce((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: failed, error: { message: 'overloaded' } }));
    });
    await expect(openaiClient(gateway.url).responses.create({ model: 'gpt-test', input: 'fix the failing test in src/app.ts' })).rejects.toThrow();
    upstream.respondOnce(responseObject(freshId()));
    expect((await continueChain(failed)).sent.instructions).toBeUndefined();
  });

  it('settles the continuation by this request\'s override', async () => {
    const first = freshId();
    upstream.respondOnce(responseObject(first));
    await openaiClient(gateway.url).responses.create({ model: 'gpt-test', input: 'fix the failing test in src/app.ts' });
    upstream.respondOnce(responseObject(freshId()));
    const step = await continueChain(first, { [HEADER.override]: 'ANSWER' });
    expect(step.headers.get(HEADER.mode)).toBe('ANSWER');
    expect(step.sent.instructions).toBe(gateway.prompts.answer);
  });
});
