import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTiebreaker, type TiebreakSettings } from '../../gateway/tiebreak.js';
import { delayThen, openaiChatCompletion, replyJson, replyRaw, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';

let endpoint: FakeUpstream;
beforeAll(async () => {
  endpoint = await startFakeUpstream(replyJson(200, openaiChatCompletion('ACTION')));
});
afterAll(async () => {
  await endpoint.close();
});

const settings = (overrides: Partial<TiebreakSettings> = {}): TiebreakSettings => ({
  url: `${endpoint.url}/v1/chat/completions`,
  model: 'tiny-router',
  apiKey: 'sk-tiebreak-test',
  timeoutMs: 800,
  cacheSize: 2,
  prompt: 'Reply ANSWER or ACTION.',
  ...overrides,
});

describe('the tie-breaker against a fake OpenAI-compatible endpoint', () => {
  it('sends one short classification call and reads the verdict', async () => {
    endpoint.reset();
    endpoint.respond(replyJson(200, openaiChatCompletion('ACTION')));
    const verdict = await createTiebreaker(settings()).decide('is the nightly job still running?');
    expect(verdict).toMatchObject({ mode: 'ACTION', result: 'action' });
    const sent = endpoint.last();
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe('Bearer sk-tiebreak-test');
    expect(sent.json).toMatchObject({ model: 'tiny-router', temperature: 0, messages: [{ role: 'system', content: 'Reply ANSWER or ACTION.' }, { role: 'user', content: 'is the nightly job still running?' }] });
  });

  it('reads a verdict in any case, with words around it', async () => {
    endpoint.respond(replyJson(200, openaiChatCompletion('answer.')));
    expect(await createTiebreaker(settings()).decide('what is a mutex')).toMatchObject({ mode: 'ANSWER', result: 'answer' });
  });

  it('caches verdicts by text: the same turn asks once, and the cache is bounded', async () => {
    endpoint.reset();
    endpoint.respond(replyJson(200, openaiChatCompletion('ACTION')));
    const breaker = createTiebreaker(settings({ cacheSize: 2 }));
    await breaker.decide('one');
    expect(await breaker.decide('one')).toMatchObject({ mode: 'ACTION', result: 'cached' });
    expect(endpoint.requests).toHaveLength(1);
    await breaker.decide('two');
    await breaker.decide('three'); // "one" is the least recently used of three: it goes
    await breaker.decide('one');
    expect(endpoint.requests).toHaveLength(4);
  });

  it.each([
    ['a 500', replyJson(500, { error: { message: 'boom' } }), 'error'],
    ['garbage that is not JSON', replyRaw(200, '<html>oops</html>', { 'content-type': 'application/json' }), 'invalid'],
    ['JSON without a verdict', replyJson(200, openaiChatCompletion('I think it depends')), 'invalid'],
    ['JSON of another shape', replyJson(200, { hello: 'world' }), 'invalid'],
    // An answer of three tokens is a few hundred bytes: a megabyte is an endpoint gone wrong, not read whole.
    ['an answer of a megabyte, verdict and all', replyJson(200, { ...openaiChatCompletion('ACTION'), padding: 'x'.repeat(1024 * 1024) }), 'invalid'],
  ] as const)('%s gives no verdict, and nothing is cached', async (_name, behaviour, result) => {
    endpoint.reset();
    endpoint.respond(behaviour);
    const breaker = createTiebreaker(settings());
    expect(await breaker.decide('same text')).toMatchObject({ mode: null, result });
    await breaker.decide('same text');
    expect(endpoint.requests).toHaveLength(2);
  });

  it('a slow endpoint is cut at the timeout, with no verdict', async () => {
    endpoint.respond(delayThen(2_000, replyJson(200, openaiChatCompletion('ACTION'))));
    const verdict = await createTiebreaker(settings({ timeoutMs: 100 })).decide('slow one');
    expect(verdict).toMatchObject({ mode: null, result: 'timeout' });
  });

  it('an endpoint nobody listens on gives no verdict', async () => {
    const verdict = await createTiebreaker(settings({ url: 'http://127.0.0.1:9/v1/chat/completions' })).decide('anyone?');
    expect(verdict).toMatchObject({ mode: null, result: 'error' });
  });
});
