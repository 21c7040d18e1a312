/**
 * Correlation: a client's x-request-id (sanitised, at most 128 characters) or a generated one is on
 * every response, routed, skipped or refused, is sent upstream, and is in the decision record.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/app.js';
import { sanitizeRequestId } from '../../middleware/request-id.js';
import { DecisionRecordSchema, type DecisionRecord } from '../../src/index.js';
import { apiReply, closedPort, replyJson, replyRaw, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { startConfigured } from '../support/running.js';
import { anthropicClient, postJson, UUID } from './clients.js';

let dir: string;
let upstream: FakeUpstream;
let gateway: RunningGateway;
const logDir = () => join(dir, 'logs');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-request-id-'));
  upstream = await startFakeUpstream(apiReply('ok'));
  gateway = await startConfigured(dir, { upstream: { url: upstream.url }, logging: { decisions: true, memory: false } }, { env: { LOG_DIR: logDir() } });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  upstream.reset();
  upstream.respond(apiReply('ok'));
});

const chat = (content: string, headers: Record<string, string> = {}) => postJson(gateway.url, '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content }] }, headers);

async function recordOf(decisionId: string): Promise<DecisionRecord> {
  await gateway.flushLogs();
  const folder = join(logDir(), 'decisions');
  for (const name of await readdir(folder)) {
    for (const line of (await readFile(join(folder, name), 'utf8')).trim().split('\n')) {
      const record = DecisionRecordSchema.parse(JSON.parse(line));
      if (record.id === decisionId) return record;
    }
  }
  throw new Error(`no record for decision ${decisionId}`);
}

describe('x-request-id', () => {
  it('honours the client’s id: on the response, sent upstream, in the decision record', async () => {
    const response = await chat('fix the failing tests in src/app.ts', { 'x-request-id': 'trace-42:a.b_c' });
    await response.arrayBuffer();
    expect(response.headers.get('x-request-id')).toBe('trace-42:a.b_c');
    expect(response.headers.get('x-correlation-id')).toBe('trace-42:a.b_c');
    expect(upstream.last().headers['x-request-id']).toBe('trace-42:a.b_c');
    const record = await recordOf(response.headers.get('x-task-router-decision-id') as string);
    expect(record.requestId).toBe('trace-42:a.b_c');
  });

  it('generates one when the client sent none, the same everywhere', async () => {
    const response = await chat('what is a race condition?');
    await response.arrayBuffer();
    const id = response.headers.get('x-request-id');
    expect(id).toMatch(UUID);
    expect(upstream.last().headers['x-request-id']).toBe(id);
    expect((await recordOf(response.headers.get('x-task-router-decision-id') as string)).requestId).toBe(id);
  });

  it('sanitises and bounds what a client sends', async () => {
    expect(sanitizeRequestId('a b"c<d>\u0007e')).toBe('abcde');
    expect(sanitizeRequestId('x'.repeat(300))).toBe('x'.repeat(128));
    expect(sanitizeRequestId('"<>" ')).toBeNull();
    expect(sanitizeRequestId(undefined)).toBeNull();
    const sent = await chat('what is a mutex?', { 'x-request-id': `id with spaces;${'z'.repeat(200)}` });
    await sent.arrayBuffer();
    expect(sent.headers.get('x-request-id')).toBe(`idwithspaces${'z'.repeat(116)}`);
    const junk = await chat('what is a mutex?', { 'x-request-id': '"";;' });
    await junk.arrayBuffer();
    expect(junk.headers.get('x-request-id')).toMatch(UUID);
  });

  it('is on skipped, refused and failed responses, and on the gateway’s own endpoints', async () => {
    const cases: [string, string, () => Promise<Response>][] = [
      ['skipped (no human text)', 'skip-1', () => postJson(gateway.url, '/v1/chat/completions', { model: 'm', messages: [{ role: 'assistant', content: 'hi' }] }, { 'x-request-id': 'skip-1' })],
      ['malformed JSON', 'bad-1', () => postJson(gateway.url, '/v1/chat/completions', '{"messages": [', { 'x-request-id': 'bad-1' })],
      ['ambiguous path', 'path-1', () => postJson(gateway.url, '/v1//chat/completions', {}, { 'x-request-id': 'path-1' })],
      ['unknown router endpoint', 'router-1', () => postJson(gateway.url, '/router/nothing', {}, { 'x-request-id': 'router-1' })],
      ['probe', 'probe-1', () => fetch(`${gateway.url}/readyz`, { headers: { 'x-request-id': 'probe-1' } })],
      ['classify only', 'classify-1', () => postJson(gateway.url, '/router/classify', { text: 'hi' }, { 'x-request-id': 'classify-1' })],
      ['passthrough path', 'models-1', () => fetch(`${gateway.url}/v1/models`, { headers: { 'x-request-id': 'models-1' } })],
    ];
    for (const [name, sent, send] of cases) {
      const response = await send();
      await response.arrayBuffer();
      expect(response.headers.get('x-request-id'), name).toBe(sent);
      expect(response.headers.get('x-correlation-id'), name).toBe(sent);
    }
  });

  it('is on the 502 when the upstream cannot be reached', async () => {
    const port = await closedPort();
    const unreachable = await startConfigured(dir, { upstream: { url: `http://127.0.0.1:${port}` } });
    try {
      const response = await postJson(unreachable.url, '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: 'hi there' }] }, { 'x-request-id': 'down-1' });
      await response.arrayBuffer();
      expect(response.status).toBe(502);
      expect(response.headers.get('x-request-id')).toBe('down-1');
    } finally {
      await unreachable.close();
    }
  });

  it('an upstream’s own x-request-id passes unchanged; ours stays in x-correlation-id', async () => {
    upstream.respond(replyRaw(200, JSON.stringify({ id: 'msg', type: 'message', role: 'assistant', model: 'm', content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } }), { 'content-type': 'application/json', 'x-request-id': 'req_upstream_9' }));
    // Through the official SDK, as a client would read it.
    const client = anthropicClient(gateway.url, { 'x-request-id': 'client-7' });
    const { response } = await client.messages.create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'what is a mutex?' }] }).withResponse();
    expect(response.headers.get('x-request-id')).toBe('req_upstream_9');
    expect(response.headers.get('x-correlation-id')).toBe('client-7');
    expect(upstream.last().headers['x-request-id']).toBe('client-7');
  });

  it('an upstream’s own x-correlation-id does not take the place of ours', async () => {
    upstream.respond(replyJson(200, { ok: true }, { 'x-correlation-id': 'upstream-own' }));
    const response = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'mine' }, body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'what is a mutex?' }] }) });
    await response.arrayBuffer();
    expect(response.headers.get('x-correlation-id')).toBe('mine');
  });
});
