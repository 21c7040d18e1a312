/**
 * Every limit the gateway enforces, tested at its boundary: body bytes (limits.bodyBytes), request head
 * bytes (limits.headerBytes, Node's maxHeaderSize), messages per request (limits.maxMessages), the
 * per-message scan budget (routing.scanBudget) and sockets to the upstream (upstream.maxSockets).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/app.js';
import { apiReply, startFakeUpstream, startGatewayForTest, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { startConfigured } from '../support/running.js';
import { APIS, CHAT_PATH, postJson } from '../gateway/clients.js';
import type { ApiName } from '../support/fake-upstream.js';

let dir: string;
let upstream: FakeUpstream;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-limits-'));
  upstream = await startFakeUpstream(apiReply('ok'));
});
afterAll(async () => {
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});

const ACTION = 'fix the failing test in src/app.ts';

/** A chat body of exactly `bytes` bytes of JSON (ASCII), padded in the user's text. */
function bodyOfBytes(bytes: number): string {
  const shell = (pad: string) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `${ACTION} ${pad}` }] });
  const body = shell('x'.repeat(bytes - shell('').length));
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

describe('limits.bodyBytes', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { bodyBytes: 4096 } });
  });
  afterAll(() => gateway?.close());

  it('exactly the limit is forwarded; one byte more is a 413', async () => {
    upstream.reset();
    const atLimit = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyOfBytes(4096));
    expect(atLimit.status).toBe(200);
    await atLimit.arrayBuffer();
    const over = await postJson(gateway.url, CHAT_PATH['openai-chat'], bodyOfBytes(4097));
    expect(over.status).toBe(413);
    expect((await over.json()).error.message).toMatch(/limits\.bodyBytes/);
    expect(upstream.requests).toHaveLength(1);
  });
});

/** Sends a raw HTTP/1.1 request and returns its status line's code. */
function rawStatus(url: string, head: string, body: string): Promise<number> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    // Written, not ended: a half-closed client socket may be closed before the proxied answer comes.
    const socket = net.connect(Number(port), hostname, () => socket.write(head + body));
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n')) socket.destroy();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0)));
  });
}

/** A POST to the chat path whose request head (request line, headers, blank line) is `bytes` long. */
function headOfBytes(bytes: number, body: string): string {
  const start = `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nX-Padding: `;
  return `${start}${'p'.repeat(bytes - start.length - 4)}\r\n\r\n`;
}

describe('limits.headerBytes', () => {
  const LIMIT = 8192;
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startConfigured(dir, { upstream: { url: upstream.url }, limits: { headerBytes: LIMIT } });
  });
  afterAll(() => gateway?.close());

  // Node counts the header lines but not quite every byte of the head, so the boundary is checked
  // 64 bytes either side of the limit.
  it('a request head 64 bytes under the limit is routed; 64 bytes over gets 431 from Node', async () => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: ACTION }] });
    upstream.reset();
    expect(await rawStatus(gateway.url, headOfBytes(LIMIT - 64, body), body)).toBe(200);
    expect(await rawStatus(gateway.url, headOfBytes(LIMIT + 64, body), body)).toBe(431);
    expect(upstream.requests).toHaveLength(1);
    // The gateway goes on serving.
    expect((await postJson(gateway.url, CHAT_PATH['openai-chat'], body)).status).toBe(200);
  });

  it('is validated in config', async () => {
    await expect(startConfigured(dir, { limits: { headerBytes: 10 } })).rejects.toThrow(/limits\.headerBytes/);
  });
});

function bodyWithMessages(api: ApiName, count: number): Record<string, unknown> {
  const turns = Array.from({ length: count }, (_, index) => (index % 2 === 0 || index === count - 1
    ? { role: 'user', content: index === count - 1 ? ACTION : `turn ${index}` }
    : { role: 'assistant', content: `reply ${index}` }));
  if (api === 'openai-responses') return { model: 'm', input: turns };
  return { model: 'm', max_tokens: 8, messages: turns };
}

describe('limits.maxMessages', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { maxMessages: 5 } });
  });
  afterAll(() => gateway?.close());

  it.each(APIS)('%s: 5 messages are routed; 6 get a 413 in the API shape naming the limit', async (api) => {
    upstream.reset();
    const atLimit = await postJson(gateway.url, CHAT_PATH[api], bodyWithMessages(api, 5));
    expect(atLimit.status).toBe(200);
    expect(atLimit.headers.get('x-task-router-mode')).toBe('ACTION');
    await atLimit.arrayBuffer();
    const over = await postJson(gateway.url, CHAT_PATH[api], bodyWithMessages(api, 6));
    expect(over.status).toBe(413);
    const error = await over.json();
    if (api === 'anthropic') expect(error).toEqual({ type: 'error', error: { type: 'request_too_large', message: expect.stringMatching(/6 messages.*at most 5.*limits\.maxMessages/) } });
    else expect(error).toEqual({ error: { message: expect.stringMatching(/6 (messages|input items).*at most 5.*limits\.maxMessages/), type: 'invalid_request_error', param: null, code: 'too_large' } });
    expect(upstream.requests).toHaveLength(1);
  });

  it('the default (10000) is in the shipped config and a 100k-message body is refused with a 413', async () => {
    const defaults = await startGatewayForTest({ upstreamUrl: upstream.url });
    try {
      upstream.reset();
      const response = await postJson(defaults.url, CHAT_PATH['openai-chat'], bodyWithMessages('openai-chat', 100_000));
      expect(response.status).toBe(413);
      expect((await response.json()).error.message).toMatch(/100000 messages.*at most 10000/);
      expect(upstream.requests).toHaveLength(0);
    } finally {
      await defaults.close();
    }
  });
});

describe('routing.scanBudget through HTTP', () => {
  const BUDGET = 1024;
  const TRIGGER = 'deploy the api to prod';
  const filler = (length: number) => 'lorem ipsum '.repeat(Math.ceil(length / 12)).slice(0, length);
  /** A message of `length` characters with the trigger in its middle. */
  const centred = (length: number) => {
    const rest = length - TRIGGER.length - 2;
    return `${filler(Math.floor(rest / 2))} ${TRIGGER} ${filler(rest - Math.floor(rest / 2))}`;
  };
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startConfigured(dir, { upstream: { url: upstream.url }, routing: { scanBudget: BUDGET } });
  });
  afterAll(() => gateway?.close());

  const modeOf = async (content: string) => {
    const response = await postJson(gateway.url, CHAT_PATH.anthropic, { model: 'c', max_tokens: 8, messages: [{ role: 'user', content }] });
    await response.arrayBuffer();
    return response.headers.get('x-task-router-mode');
  };

  it('a message of exactly the budget is read whole: the trigger in its middle is seen', async () => {
    expect(centred(BUDGET)).toHaveLength(BUDGET);
    expect(await modeOf(centred(BUDGET))).toBe('ACTION');
  });

  it('past the budget only head and tail are read: the same trigger in the middle is not', async () => {
    expect(await modeOf(centred(BUDGET + 100))).toBe('ANSWER');
  });

  it('past the budget a trigger at either end is still seen', async () => {
    expect(await modeOf(`${TRIGGER} ${filler(BUDGET * 4)}`)).toBe('ACTION');
    expect(await modeOf(`${filler(BUDGET * 4)} ${TRIGGER}`)).toBe('ACTION');
  });
});

describe('upstream.maxSockets under a burst', () => {
  it('40 concurrent requests through maxSockets 4: never more than 4 sockets to the upstream, all answered', async () => {
    const counted = await startFakeUpstream();
    let inFlight = 0;
    let mostInFlight = 0;
    let mostSockets = 0;
    counted.respond(async (req, res) => {
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      mostSockets = Math.max(mostSockets, counted.openSockets());
      await new Promise((resolve) => setTimeout(resolve, 50));
      inFlight -= 1;
      await apiReply('ok')(req, res);
    });
    const gateway = await startGatewayForTest({ upstreamUrl: counted.url, overrides: { maxSockets: 4 } });
    try {
      const statuses = await Promise.all(Array.from({ length: 40 }, async (_, index) => {
        const response = await postJson(gateway.url, CHAT_PATH['openai-chat'], { model: 'm', stream: index % 2 === 0, messages: [{ role: 'user', content: ACTION }] });
        await response.arrayBuffer();
        return response.status;
      }));
      expect(statuses).toEqual(Array(40).fill(200));
      expect(counted.requests).toHaveLength(40);
      expect(mostSockets).toBeLessThanOrEqual(4);
      expect(mostInFlight).toBe(4);
      expect(counted.openSockets()).toBeLessThanOrEqual(4);
    } finally {
      await gateway.close();
      await counted.close();
    }
  });
});
