/**
 * The README's middleware recipe with a proxy agent that queues requests for a socket (maxSockets
 * reached): http-proxy sends a queued request's headers before its `proxyReq` event, so a body sent
 * again from that event cannot go. With forwardBody() every request reaches the upstream with its
 * routed body; restreamBody fails a queued request alone, saying what to use instead.
 */
import http from 'node:http';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bodyErrors, finalErrorHandler, forwardBody, jsonBody, loadPrompts, restreamBody, taskRouter } from '../../middleware/index.js';
import type { PromptSet } from '../../src/index.js';
import { apiReply, delayThen, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { listenOnLoopback, type Listening } from '../support/listening.js';
import { postJson } from './clients.js';

let upstream: FakeUpstream;
let prompts: PromptSet;
const opened: { server: Listening; agent: http.Agent }[] = [];

beforeAll(async () => {
  upstream = await startFakeUpstream();
  prompts = await loadPrompts();
});
afterAll(async () => {
  await upstream?.close();
});
afterEach(async () => {
  for (const { server, agent } of opened.splice(0)) {
    agent.destroy();
    await server.close();
  }
  upstream.reset();
});

async function listen(app: express.Express, agent: http.Agent): Promise<string> {
  const server = await listenOnLoopback(app);
  opened.push({ server, agent });
  return server.url;
}

const turn = (content: string) => ({ model: 'm', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content }] });
const ASKED = ['fix the failing tests in src/app.ts', 'what is a race condition?', 'deploy the staging branch', 'explain what a mutex is'];

/** Sends every turn of ASKED at once, each answered as it comes back. */
async function sendAll(url: string): Promise<{ status: number; mode: string | null; text: string }[]> {
  return Promise.all(ASKED.map(async (content) => {
    const response = await postJson(url, '/v1/chat/completions', turn(content));
    return { status: response.status, mode: response.headers.get('x-task-router-mode'), text: await response.text() };
  }));
}

function routedApp(): express.Express {
  const app = express();
  app.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({ prompts }));
  return app;
}

describe('the README recipe behind an agent with maxSockets 1', () => {
  it('every one of several concurrent requests reaches a slow upstream with its routed body', async () => {
    upstream.respond(delayThen(150, apiReply('ok')));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const app = routedApp();
    app.use(forwardBody(), createProxyMiddleware({ target: upstream.url, changeOrigin: true, agent }));
    const url = await listen(app, agent);
    const answers = await sendAll(url);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
    expect(upstream.requests).toHaveLength(ASKED.length);
    for (const seen of upstream.requests) {
      const asked = ASKED.indexOf(seen.json.messages[1].content);
      const mode = answers[asked]?.mode;
      expect(mode === 'ACTION' || mode === 'ANSWER').toBe(true);
      // The route's prompt, then whatever debate it carries ('deploy the staging branch' gets one).
      expect(seen.json.messages[0].content.startsWith(mode === 'ACTION' ? prompts.action : prompts.answer)).toBe(true);
      expect(Number(seen.headers['content-length'])).toBe(seen.body.length);
    }
  });

  it('restreamBody wired as well does nothing to a body forwardBody() sends', async () => {
    upstream.respond(delayThen(50, apiReply('ok')));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const app = routedApp();
    app.use(forwardBody(), createProxyMiddleware({ target: upstream.url, changeOrigin: true, agent, on: { proxyReq: restreamBody } }));
    const url = await listen(app, agent);
    expect((await sendAll(url)).map((answer) => answer.status)).toEqual([200, 200, 200, 200]);
    expect(upstream.requests.map((seen) => seen.json.messages[1].content).sort()).toEqual([...ASKED].sort());
  });

  it('restreamBody alone fails a queued request by itself, naming forwardBody(), and the process goes on', async () => {
    upstream.respond(delayThen(150, apiReply('ok')));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const errors: Error[] = [];
    const app = routedApp();
    app.use(createProxyMiddleware({ target: upstream.url, changeOrigin: true, agent, on: { proxyReq: restreamBody, error: (error, _req, res) => {
      errors.push(error);
      (res as express.Response).status(502).json({ error: { message: error.message } });
    } } }));
    const url = await listen(app, agent);
    const answers = await sendAll(url);
    // The first request had the socket; the ones queued behind it could not be sent.
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
    expect(answers.filter((answer) => answer.status === 502)).toHaveLength(ASKED.length - 1);
    expect(new Set(errors.map((error) => error.message)).size).toBe(1);
    expect(errors[0]?.message).toMatch(/queued the request for a socket.*forwardBody\(\)/);
    expect(upstream.requests).toHaveLength(1);
  });
});

describe('forwardBody() and a body it cannot send', () => {
  it('passes an UnsendableBodyError to the app\'s error handler; nothing goes upstream', async () => {
    const agent = new http.Agent({ keepAlive: true });
    const app = express();
    // JSON.parse reads this; JSON.stringify cannot write it again (it recurses too deep).
    app.use(express.json());
    app.use('/v1', taskRouter({ prompts }));
    const seen: string[] = [];
    app.use(forwardBody(), createProxyMiddleware({ target: upstream.url, agent }));
    app.use((error: Error, _req: express.Request, _res: express.Response, next: express.NextFunction) => {
      seen.push(error.name);
      next(error);
    }, finalErrorHandler());
    const url = await listen(app, agent);
    const nested = `{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    const failed = await postJson(url, '/v1/embeddings', nested);
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ error: { type: 'api_error' } });
    expect(seen).toEqual(['UnsendableBodyError']);
    expect(upstream.requests).toHaveLength(0);
  });
});

describe('forwardBody() and the app\'s other parsers', () => {
  it('an express.raw() Buffer goes as its bytes under its own content type, through a queueing agent', async () => {
    upstream.respond(delayThen(50, apiReply('ok')));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const app = express();
    app.use(express.raw({ type: 'application/octet-stream' }));
    app.use(forwardBody(), createProxyMiddleware({ target: upstream.url, agent }));
    const url = await listen(app, agent);
    const files = [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00]), Buffer.from([0xff, 0x00, 0x01])];
    const statuses = await Promise.all(files.map(async (bytes) => {
      const response = await fetch(`${url}/v1/files`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(bytes) });
      await response.arrayBuffer();
      return response.status;
    }));
    expect(statuses).toEqual([200, 200]);
    const received = upstream.requests.map((seen) => seen.body.toString('hex')).sort();
    expect(received).toEqual(files.map((bytes) => bytes.toString('hex')).sort());
    for (const seen of upstream.requests) expect(seen.headers['content-type']).toBe('application/octet-stream');
  });
});
