import { gatewayAndUpstream } from '../support/suite.js';
/**
 * Streams and connections (FIELD-NOTES 1, 12): a client that goes away aborts the upstream request, an
 * upstream that dies mid-stream does not leave the client hanging, and a chunked client request is
 * re-sent upstream with its true length. (That SSE passes through unbuffered is timed in
 * streaming.slow.test.ts.)
 */
import http from 'node:http';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  apiReply,
  delayThen,
  replySse,
  sseEvents,
  type ApiName,
  type FakeUpstream,
  type RecordedRequest,
  type TestGateway,
} from '../support/fake-upstream.js';
import { APIS, anthropicClient, bodyWithUserText, CHAT_PATH, openaiClient, postJson, systemOf } from './clients.js';

const ACTION = 'fix the failing test in src/app.ts';

let upstream: FakeUpstream;
let gateway: TestGateway;

gatewayAndUpstream((made) => ({ gateway, upstream } = made));
beforeEach(() => {
  upstream.reset();
  upstream.respond(apiReply('ok'));
});

/** Resolves 'closed' when the request's upstream socket closes within `ms`, else 'open'. */
function closedWithin(request: RecordedRequest, ms: number): Promise<'closed' | 'open'> {
  return Promise.race([
    request.closed.then(() => 'closed' as const),
    new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), ms)),
  ]);
}

describe('a client that goes away aborts the upstream request', () => {
  it.each(APIS)('%s: fetch aborted mid-stream → the upstream socket closes within a second', async (api) => {
    // One event, then the stream never ends.
    upstream.respond(replySse(sseEvents(api, 'never finishing').slice(0, 2), { neverEnd: true }));
    const controller = new AbortController();
    const response = await fetch(`${gateway.url}${CHAT_PATH[api]}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(bodyWithUserText(api, ACTION, { stream: true })),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    const seen = upstream.last();
    expect(seen.socketClosed()).toBe(false);
    controller.abort();
    await reader.read().catch(() => undefined);
    expect(await closedWithin(seen, 1_000)).toBe('closed');
  });

  it('fetch aborted before any response header → the upstream socket closes', async () => {
    upstream.respond(delayThen(5_000, apiReply('late')));
    const controller = new AbortController();
    const request = fetch(`${gateway.url}${CHAT_PATH['openai-chat']}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(bodyWithUserText('openai-chat', ACTION)),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    const seen = (await upstream.waitForRequests(1))[0]!;
    expect(seen.socketClosed()).toBe(false);
    controller.abort();
    await request;
    expect(await closedWithin(seen, 1_000)).toBe('closed');
  });

  it('openai SDK: breaking out of the stream closes the upstream request', async () => {
    upstream.respond(replySse(sseEvents('openai-chat', 'a b c d e f g h'), { delayMs: 100, neverEnd: true }));
    const stream = await openaiClient(gateway.url).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: ACTION }], stream: true });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) break;
    }
    expect(await closedWithin(upstream.last(), 1_000)).toBe('closed');
  });

  it('anthropic SDK: controller.abort() closes the upstream request', async () => {
    upstream.respond(replySse(sseEvents('anthropic', 'never finishing').slice(0, 1), { neverEnd: true }));
    const stream = await anthropicClient(gateway.url).messages.create({
      model: 'c', max_tokens: 16, messages: [{ role: 'user', content: ACTION }], stream: true,
    });
    const seen = upstream.last();
    expect(seen.socketClosed()).toBe(false);
    stream.controller.abort();
    expect(await closedWithin(seen, 1_000)).toBe('closed');
  });

  it('the gateway keeps serving after aborted streams', async () => {
    upstream.respond(replySse(sseEvents('openai-chat', 'x'), { neverEnd: true }));
    for (let i = 0; i < 5; i += 1) {
      const controller = new AbortController();
      const response = await fetch(`${gateway.url}${CHAT_PATH['openai-chat']}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(bodyWithUserText('openai-chat', ACTION, { stream: true })),
        signal: controller.signal,
      });
      await response.body!.getReader().read();
      controller.abort();
    }
    upstream.respond(apiReply('still here'));
    const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION));
    expect((await response.json()).choices[0].message.content).toBe('still here');
    await Promise.all(upstream.requests.slice(0, 5).map(async (request) => expect(await closedWithin(request, 1_000)).toBe('closed')));
  });
});

describe('an upstream that dies mid-stream', () => {
  /** Reads the stream through the gateway; reports how it ended, or that it still hangs after `ms`. */
  async function outcomeOf(api: ApiName, ms = 2_000): Promise<{ status: number; outcome: string; text: string }> {
    const controller = new AbortController();
    const response = await fetch(`${gateway.url}${CHAT_PATH[api]}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(bodyWithUserText(api, ACTION, { stream: true })),
      signal: controller.signal,
    });
    let text = '';
    const reading = (async () => {
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return 'ended';
        text += decoder.decode(value, { stream: true });
      }
    })().catch(() => 'errored');
    const outcome = await Promise.race([reading, new Promise<string>((resolve) => setTimeout(() => resolve(`still hanging after ${ms} ms`), ms))]);
    controller.abort();
    return { status: response.status, outcome, text };
  }

  it.each(APIS)('%s: an upstream reset (RST) after two events fails the client stream', async (api) => {
    const events = sseEvents(api, 'cut short by a reset');
    upstream.respond(replySse(events, { resetAfter: 2, delayMs: 50 }));
    const result = await outcomeOf(api);
    expect(result.status).toBe(200);
    expect(result.text).toBe(events.slice(0, 2).join(''));
    expect(result.outcome).toBe('errored');
  });

  // An upstream that closes mid-stream (FIN, no reset) must end the client's stream, not leave it hanging.
  it.each(APIS)('%s: an upstream that closes the connection after two events fails the client stream', async (api) => {
    const events = sseEvents(api, 'cut short by a close');
    upstream.respond(replySse(events, { closeAfter: 2, delayMs: 50 }));
    const result = await outcomeOf(api);
    expect(result.status).toBe(200);
    expect(result.text).toBe(events.slice(0, 2).join(''));
    expect(result.outcome).toBe('errored');
  });

  it('straight to the fake (no gateway), the same close fails the client at once', async () => {
    upstream.respond(replySse(sseEvents('openai-chat', 'cut'), { closeAfter: 2, delayMs: 50 }));
    const response = await fetch(`${upstream.url}/v1/chat/completions`, { method: 'POST', body: '{"stream":true}' });
    await expect(response.text()).rejects.toThrow();
  });

  it('openai SDK: an upstream closing mid-stream rejects the iteration instead of hanging', async () => {
    upstream.respond(replySse(sseEvents('openai-chat', 'cut short'), { closeAfter: 2, delayMs: 50 }));
    const stream = await openaiClient(gateway.url).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: ACTION }], stream: true });
    const consume = (async () => {
      for await (const chunk of stream) void chunk;
      return 'ended';
    })().catch(() => 'errored');
    const outcome = await Promise.race([consume, new Promise((resolve) => setTimeout(() => resolve('hanging'), 2_000))]);
    stream.controller.abort();
    expect(outcome).toBe('errored');
  });
});

/** Checks the upstream got a routed, fixed-length body carrying our prompt once. */
function expectRoutedFixedLength(api: ApiName, seen: RecordedRequest): void {
  expect(seen.headers['transfer-encoding']).toBeUndefined();
  expect(seen.headers['content-length']).toBe(String(seen.body.length));
  expect(seen.json).toBeDefined();
  expect(systemOf(api, seen.json)).toBe(gateway.prompts.action);
  expect(seen.headers['x-task-router-mode']).toBe('ACTION');
}

describe('a chunked client request', () => {
  it.each(APIS)('%s: fetch with a ReadableStream body → routed, upstream gets content-length', async (api) => {
    const json = JSON.stringify(bodyWithUserText(api, ACTION));
    const pieces = [json.slice(0, 10), json.slice(10, 30), json.slice(30)];
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        for (const piece of pieces) {
          controller.enqueue(new TextEncoder().encode(piece));
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        controller.close();
      },
    });
    const response = await fetch(`${gateway.url}${CHAT_PATH[api]}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    await response.arrayBuffer();
    expectRoutedFixedLength(api, upstream.last());
  });

  it('node:http with transfer-encoding: chunked → routed, upstream gets content-length', async () => {
    const json = JSON.stringify(bodyWithUserText('anthropic', ACTION, { stream: true }));
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${gateway.url}${CHAT_PATH.anthropic}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.write(json.slice(0, 5));
      setTimeout(() => {
        req.write(json.slice(5, 50));
        req.end(json.slice(50));
      }, 30);
    });
    expect(status).toBe(200);
    expectRoutedFixedLength('anthropic', upstream.last());
  });

  it('a chunked body with no human text is forwarded byte for byte with a content-length', async () => {
    const raw = '{"model":"m",   "messages":[{"role":"assistant","content":"hi"}]}';
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(raw.slice(0, 7)));
        controller.enqueue(new TextEncoder().encode(raw.slice(7)));
        controller.close();
      },
    });
    const response = await fetch(`${gateway.url}${CHAT_PATH['openai-chat']}`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = upstream.last();
    expect(seen.text).toBe(raw);
    expect(seen.headers['transfer-encoding']).toBeUndefined();
    expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(raw)));
  });
});

describe('request bodies the gateway parses are re-sent as JSON with their true length (FIELD-NOTES 12)', () => {
  it.each(['application/json; charset=utf-8', 'application/json; charset=utf8', 'application/json; charset="UTF8"'])('content-type %s', async (contentType) => {
    const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', `${ACTION} — é ü 日本`), {
      'content-type': contentType,
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expectRoutedFixedLength('openai-chat', upstream.last());
    expect(upstream.last().json.messages[1].content).toBe(`${ACTION} — é ü 日本`);
  });

  it('numbers JSON.parse cannot hold exactly reach the upstream as the client wrote them', async () => {
    const body = JSON.stringify({ ...bodyWithUserText('openai-chat', ACTION), seed: 0, metadata: { order: 'id 12345678901234567890' }, temperature: 0.7 })
      .replace('"seed":0', '"seed":9007199254740993,"limits":[-12345678901234567890,1e400,1.5e3]');
    const response = await fetch(`${gateway.url}${CHAT_PATH['openai-chat']}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    await response.arrayBuffer();
    const seen = upstream.last();
    expectRoutedFixedLength('openai-chat', seen);
    expect(seen.text).toContain('"seed":9007199254740993,"limits":[-12345678901234567890,1e400,1500]');
    expect(seen.text).toContain('"metadata":{"order":"id 12345678901234567890"}');
    expect(seen.text).not.toContain('\\u0000');
  });

  it('a gzip-encoded request body is routed and sent on decoded', async () => {
    const { gzipSync } = await import('node:zlib');
    const body = gzipSync(JSON.stringify(bodyWithUserText('openai-chat', ACTION)));
    const response = await fetch(`${gateway.url}${CHAT_PATH['openai-chat']}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body,
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = upstream.last();
    expect(seen.headers['content-encoding']).toBeUndefined();
    expectRoutedFixedLength('openai-chat', seen);
  });

  // A rewritten body is JSON whatever content type the client sent (fetch says text/plain).
  it('fetch with a string body and no content-type (text/plain) is routed, not a 502', async () => {
    const response = await fetch(`${gateway.url}${CHAT_PATH['openai-chat']}`, {
      method: 'POST',
      body: JSON.stringify(bodyWithUserText('openai-chat', ACTION)),
    });
    const text = await response.text();
    expect({ status: response.status, body: text.slice(0, 200) }).toMatchObject({ status: 200 });
    expectRoutedFixedLength('openai-chat', upstream.last());
  });

  // `curl -d` sends application/x-www-form-urlencoded: the body still reaches the upstream as JSON.
  it('a JSON body sent as application/x-www-form-urlencoded (curl -d) reaches the upstream as JSON', async () => {
    const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyWithUserText('openai-chat', ACTION), {
      'content-type': 'application/x-www-form-urlencoded',
    });
    await response.arrayBuffer();
    const seen = upstream.last();
    expect(seen.text.slice(0, 80)).toMatch(/^\{/);
    expectRoutedFixedLength('openai-chat', seen);
  });

  // With no content-type at all the body is still sent, with its true length.
  it('a JSON body with no content-type header reaches the upstream', async () => {
    const json = JSON.stringify(bodyWithUserText('openai-chat', ACTION));
    const status = await new Promise<number | string>((resolve, reject) => {
      const req = http.request(`${gateway.url}${CHAT_PATH['openai-chat']}`, {
        method: 'POST',
        headers: { 'content-length': String(Buffer.byteLength(json)) },
      }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.setTimeout(3_000, () => {
        req.destroy();
        resolve('no response within 3 s');
      });
      req.on('error', reject);
      req.end(json);
    });
    expect(status).toBe(200);
    expectRoutedFixedLength('openai-chat', upstream.last());
  });

  // Expect: 100-continue is answered by our body parser and not passed upstream, where it would wait forever.
  it('a request with Expect: 100-continue is routed and answered', async () => {
    const json = JSON.stringify(bodyWithUserText('openai-chat', ACTION));
    const outcome = await new Promise<number | string>((resolve, reject) => {
      const req = http.request(`${gateway.url}${CHAT_PATH['openai-chat']}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(json)), expect: '100-continue' },
      }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('continue', () => req.end(json));
      req.setTimeout(3_000, () => {
        req.destroy();
        resolve('no response within 3 s');
      });
      req.on('error', reject);
    });
    expect(outcome).toBe(200);
    expectRoutedFixedLength('openai-chat', upstream.last());
  });
});
