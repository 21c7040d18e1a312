/**
 * Streams, timed (FIELD-NOTES 1): SSE passes through unbuffered, each event reaching the client right
 * after the upstream writes it. (The rest of the stream behaviour is in streaming.test.ts.)
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { apiReply, replySse, sseEvents, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { gatewayAndUpstream } from '../support/suite.js';
import { APIS, anthropicClient, bodyWithUserText, CHAT_PATH, openaiClient, postJson } from './clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const GAP_MS = 150;

let upstream: FakeUpstream;
let gateway: TestGateway;

gatewayAndUpstream((made) => ({ gateway, upstream } = made));
beforeEach(() => {
  upstream.reset();
  upstream.respond(apiReply('ok'));
});

/** Reads a fetch body to its end, stamping when each byte count was reached. */
async function readStamped(response: Response): Promise<{ text: string; arrivals: { at: number; length: number }[] }> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const arrivals: { at: number; length: number }[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    arrivals.push({ at: performance.now(), length: text.length });
  }
  return { text, arrivals };
}

describe('SSE is not buffered (chunks 150 ms apart)', () => {
  it.each(APIS)('%s: each event reaches the client right after the upstream writes it', async (api) => {
    const events = sseEvents(api, 'alpha beta gamma delta epsilon');
    upstream.respond(replySse(events, { delayMs: GAP_MS }));
    const response = await postJson(gateway.url, CHAT_PATH[api], bodyWithUserText(api, ACTION, { stream: true }));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    const { text, arrivals } = await readStamped(response);
    expect(text).toBe(events.join(''));

    const writes = upstream.last().writes;
    expect(writes).toHaveLength(events.length);
    // When did the client hold event i in full? Compare with when the upstream wrote it.
    let offset = 0;
    const lags: number[] = [];
    for (const [index, event] of events.entries()) {
      offset += event.length;
      const arrival = arrivals.find((a) => a.length >= offset);
      expect(arrival, `event ${index} never arrived`).toBeDefined();
      lags.push(arrival!.at - writes[index]!);
    }
    const firstArrival = arrivals.find((a) => a.length >= events[0]!.length)!.at;
    expect(lags[0]).toBeLessThan(100);
    expect(firstArrival).toBeLessThan(writes[writes.length - 1]!);
    // Not one event waited for the next one (150 ms later).
    for (const lag of lags) expect(lag).toBeLessThan(100);
    // The client saw the stream in several reads, spread over the upstream's writing time.
    expect(arrivals.length).toBeGreaterThanOrEqual(3);
  });

  it('openai SDK: the first delta is in hand before the upstream writes the last event', async () => {
    const events = sseEvents('openai-chat', 'one two three four five six');
    upstream.respond(replySse(events, { delayMs: GAP_MS }));
    const stream = await openaiClient(gateway.url).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: ACTION }], stream: true });
    let firstDeltaAt = 0;
    let text = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.content ?? '';
      if (delta && !firstDeltaAt) firstDeltaAt = performance.now();
      text += delta;
    }
    expect(text).toBe('one two three four five six');
    const writes = upstream.last().writes;
    expect(firstDeltaAt).toBeGreaterThan(0);
    expect(firstDeltaAt).toBeLessThan(writes[writes.length - 1]!);
  });

  it('anthropic SDK: the first text delta is in hand before the upstream writes the last event', async () => {
    const events = sseEvents('anthropic', 'one two three four five six');
    upstream.respond(replySse(events, { delayMs: GAP_MS }));
    const stream = await anthropicClient(gateway.url).messages.create({
      model: 'c', max_tokens: 16, messages: [{ role: 'user', content: ACTION }], stream: true,
    });
    let firstDeltaAt = 0;
    let text = '';
    for await (const event of stream) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
        if (!firstDeltaAt) firstDeltaAt = performance.now();
        text += event.delta.text;
      }
    }
    expect(text).toBe('one two three four five six');
    const writes = upstream.last().writes;
    expect(firstDeltaAt).toBeLessThan(writes[writes.length - 1]!);
  });
});
