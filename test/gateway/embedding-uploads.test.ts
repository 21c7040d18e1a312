/**
 * Uploads (multipart forms, audio, files) through the README's middleware recipe and through the
 * gateway: jsonBody reads JSON, and any body on a chat route, but leaves every other body's stream to
 * the proxy, so it reaches the upstream byte for byte under its own Content-Type.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bodyErrors, finalErrorHandler, forwardBody, jsonBody, loadPrompts, taskRouter } from '../../middleware/index.js';
import type { PromptSet } from '../../src/index.js';
import { startFakeUpstream, startGatewayForTest, type FakeUpstream, type TestGateway } from '../support/fake-upstream.js';
import { listenOnLoopback } from '../support/listening.js';
import { closedAfterEach } from '../support/suite.js';
import { postJson } from './clients.js';

let upstream: FakeUpstream;
let gateway: TestGateway;
let prompts: PromptSet;
let recipeUrl: string;
/** What the host app saw in req.body after jsonBody, per request path. */
let seenBodies: unknown[];
const closing = closedAfterEach();

beforeAll(async () => {
  upstream = await startFakeUpstream();
  gateway = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { bodyBytes: 64 * 1024 } });
  prompts = await loadPrompts();
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});
beforeEach(async () => {
  upstream.reset();
  seenBodies = [];
  const app = express();
  app.use('/v1', jsonBody(64 * 1024), bodyErrors, taskRouter({ prompts }), (req: Request, _res: Response, next: NextFunction) => {
    seenBodies.push(req.body);
    next();
  });
  app.use(forwardBody(), createProxyMiddleware({ target: upstream.url, changeOrigin: true }));
  app.use(finalErrorHandler());
  recipeUrl = closing(await listenOnLoopback(app)).url;
});

/** Bytes no JSON parser reads: an MP3 frame header, a NUL and bytes that are not UTF-8. */
const AUDIO = Buffer.from([0xff, 0xfb, 0x90, 0x64, 0x00, 0x00, 0xc3, 0x28, 0x7b, 0x22, 0xa0, 0xa1]);

const through = [
  ['the README recipe', () => recipeUrl],
  ['the gateway', () => gateway.url],
] as const;

describe.each(through)('uploads through %s', (_name, urlOf) => {
  it('a multipart/form-data upload (POST /v1/audio/transcriptions) reaches the upstream byte for byte', async () => {
    const form = new FormData();
    form.append('model', 'whisper-1');
    form.append('file', new Blob([new Uint8Array(AUDIO)], { type: 'audio/mpeg' }), 'speech.mp3');
    const sent = new globalThis.Request(`${urlOf()}/v1/audio/transcriptions`, { method: 'POST', body: form });
    const type = sent.headers.get('content-type') ?? '';
    const bytes = Buffer.from(await sent.clone().arrayBuffer());
    const response = await fetch(sent);
    await response.arrayBuffer();
    expect(response.status).toBe(200);
    expect(upstream.last().headers['content-type']).toBe(type);
    expect(upstream.last().body.equals(bytes)).toBe(true);
  });

  it.each([
    ['/v1/files', 'application/octet-stream'],
    ['/v1/audio/transcriptions', 'audio/mpeg'],
    ['/v1/uploads/part', 'text/plain'],
  ])('a %s body labelled %s reaches the upstream byte for byte', async (path, type) => {
    const response = await fetch(`${urlOf()}${path}`, { method: 'POST', headers: { 'content-type': type }, body: new Uint8Array(AUDIO) });
    await response.arrayBuffer();
    expect(response.status).toBe(200);
    expect(upstream.last().headers['content-type']).toBe(type);
    expect(upstream.last().body.equals(AUDIO)).toBe(true);
  });
});

describe('what jsonBody reads in the recipe', () => {
  it('leaves an upload unread: req.body stays unset for the app, the stream goes to the proxy', async () => {
    const response = await fetch(`${recipeUrl}/v1/files`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(AUDIO) });
    await response.arrayBuffer();
    expect(seenBodies).toEqual([undefined]);
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'application/vnd.api+json'])('reads a %s body on a path that is not a chat route', async (type) => {
    const response = await postJson(recipeUrl, '/v1/embeddings', { model: 'e', input: 'hello' }, { 'content-type': type });
    await response.arrayBuffer();
    expect(response.status).toBe(200);
    expect(seenBodies).toEqual([{ model: 'e', input: 'hello' }]);
    expect(upstream.last().json).toEqual({ model: 'e', input: 'hello' });
  });

  it('still reads and routes a chat body whatever its label (curl -d says form-encoded)', async () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'fix the failing tests in src/app.ts' }] };
    const response = await postJson(recipeUrl, '/v1/chat/completions', body, { 'content-type': 'application/x-www-form-urlencoded' });
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(upstream.last().json.messages[0].content).toBe(prompts.action);
    expect(upstream.last().headers['content-type']).toBe('application/json');
  });

  it('still refuses bad JSON labelled as JSON, in the API\'s shape', async () => {
    const response = await postJson(recipeUrl, '/v1/embeddings', '{"model":', { 'content-type': 'application/json' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect(upstream.requests).toHaveLength(0);
  });
});
