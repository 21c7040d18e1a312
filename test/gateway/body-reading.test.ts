/**
 * Reading request bodies: a plain JSON body (what the SDKs send) is read on a short path, anything else
 * (another content type, a charset, compression, chunking) by body-parser. Both must read and refuse
 * bodies alike: the client cannot tell which path its body took.
 */
import { gzipSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import type { FakeUpstream, TestGateway } from '../support/fake-upstream.js';
import { postHead, rawExchange, rawRequest } from '../support/raw-http.js';
import { gatewayAndUpstream } from '../support/suite.js';
import { bodyWithUserText, CHAT_PATH, postJson } from './clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const PATH = CHAT_PATH['openai-chat'];

describe('request bodies', () => {
  let upstream: FakeUpstream;
  let gateway: TestGateway;
  gatewayAndUpstream((made) => ({ upstream, gateway } = made));
  beforeEach(() => upstream.reset());

  it.each([
    ['cut short', '{"model":"m","messages":[{"role":"user",'],
    ['a stray comma', '{"model":"m",}'],
    ['white space only', '   '],
  ])('malformed JSON (%s) gets the same 400 whatever path read it', async (_name, malformed) => {
    const plain = await postJson(gateway.url, PATH, malformed);
    const labelled = await postJson(gateway.url, PATH, malformed, { 'content-type': 'text/plain' });
    const gzipped = await fetch(`${gateway.url}${PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync(malformed) });
    expect([plain.status, labelled.status, gzipped.status]).toEqual([400, 400, 400]);
    const answer = await plain.json();
    expect(JSON.stringify(answer)).toMatch(/not valid JSON/);
    expect(await labelled.json()).toEqual(answer);
    expect(await gzipped.json()).toEqual(answer);
    expect(upstream.requests).toHaveLength(0);
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset="UTF-8"', 'text/plain'])('a UTF-8 byte order mark before the JSON is skipped (%s)', async (type) => {
    const json = JSON.stringify(bodyWithUserText('openai-chat', ACTION));
    const response = await rawRequest(gateway.url, postHead(PATH, `\uFEFF${json}`, []).map((line) => (line.startsWith('Content-Type') ? `Content-Type: ${type}` : line)), `\uFEFF${json}`);
    expect(response?.status).toBe(200);
    expect(response?.headers['x-task-router-mode']).toBe('ACTION');
    expect(upstream.requests).toHaveLength(1);
  });

  it.each(['application/json', 'text/plain'])('an integer past 2^53 after a byte order mark still goes on as written (%s)', async (type) => {
    const json = `\uFEFF{"model":"m","seed":12345678901234567891,"messages":[{"role":"user","content":"${ACTION}"}]}`;
    const response = await rawRequest(gateway.url, postHead(PATH, json).map((line) => (line.startsWith('Content-Type') ? `Content-Type: ${type}` : line)), json);
    expect(response?.status).toBe(200);
    expect(upstream.requests[0]?.text).toContain('"seed":12345678901234567891');
  });

  it('a body that arrives in pieces is read whole', async () => {
    const json = JSON.stringify(bodyWithUserText('openai-chat', `${ACTION} ${'é'.repeat(500)}`));
    const bytes = Buffer.from(json);
    const exchange = rawExchange(gateway.url, postHead(PATH, bytes));
    // Split inside a two-byte character, so a piece ends mid-character.
    const cuts = [0, bytes.indexOf(0xc3) + 1, Math.floor(bytes.length / 2), bytes.length];
    for (let i = 1; i < cuts.length; i += 1) {
      exchange.socket.write(bytes.subarray(cuts[i - 1], cuts[i]));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const response = await exchange.response;
    exchange.socket.destroy();
    expect(response?.status).toBe(200);
    expect(upstream.requests).toHaveLength(1);
    expect(JSON.stringify(upstream.requests[0]?.json)).toContain('é'.repeat(500));
  });

  it('a client gone before its body is complete sends nothing upstream, and the gateway goes on', async () => {
    const json = JSON.stringify(bodyWithUserText('openai-chat', ACTION));
    const exchange = rawExchange(gateway.url, postHead(PATH, `${json}${' '.repeat(100)}`), json);
    await new Promise((resolve) => setTimeout(resolve, 50));
    exchange.socket.destroy();
    expect(await exchange.response).toBeNull();
    const after = await postJson(gateway.url, PATH, bodyWithUserText('openai-chat', ACTION));
    expect(after.status).toBe(200);
    await after.arrayBuffer();
    expect(upstream.requests).toHaveLength(1);
  });
});
