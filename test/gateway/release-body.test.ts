/**
 * The gateway's proxy lets go of a request's body once the body is on its way upstream: the parsed
 * body, the client's bytes and our serialised ones. The decision stays for the logs and metrics.
 */
import express, { type Request } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUpstreamProxy, type UpstreamProxy } from '../../gateway/proxy.js';
import { jsonBody, loadPrompts, taskRouter } from '../../middleware/index.js';
import { rawBodyOf } from '../../middleware/json-body.js';
import { routingOf } from '../../middleware/task-router.js';
import { apiReply, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { listenOnLoopback, type Listening } from '../support/listening.js';
import { postJson } from './clients.js';

let upstream: FakeUpstream;
let server: Listening;
let proxy: UpstreamProxy;
let url: string;
const seen: Request[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  proxy = createUpstreamProxy({ url: upstream.url, timeoutMs: 5000, maxSockets: 8 });
  const app = express();
  app.use(jsonBody(1024 * 1024), taskRouter({ prompts: await loadPrompts() }), (req, _res, next) => {
    seen.push(req);
    next();
  }, proxy.handler);
  server = await listenOnLoopback(app);
  url = server.url;
});
afterAll(async () => {
  await server.close();
  proxy.close();
  await upstream.close();
});

describe('once the body is forwarded', () => {
  it('a routed request holds neither its parsed body nor its bytes, and keeps its decision', async () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'fix the failing tests in src/app.ts' }] };
    const response = await postJson(url, '/v1/chat/completions', body);
    await response.arrayBuffer();
    expect(response.status).toBe(200);
    expect(upstream.last().json.messages.at(-1)).toEqual(body.messages[0]);
    const req = seen.at(-1) as Request;
    expect(req.body).toBeUndefined();
    expect(rawBodyOf(req)).toBeUndefined();
    expect(routingOf(req)?.serialized).toBeNull();
    expect(routingOf(req)?.routed?.decision.mode).toBe('ACTION');
  });

  it('so does a body forwarded as the client sent it', async () => {
    const raw = '{"input": "some text to embed"}';
    const response = await postJson(url, '/v1/embeddings', raw);
    await response.arrayBuffer();
    expect(upstream.last().text).toBe(raw);
    const req = seen.at(-1) as Request;
    expect(req.body).toBeUndefined();
    expect(rawBodyOf(req)).toBeUndefined();
  });
});
