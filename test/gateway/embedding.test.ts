/**
 * taskRouter inside someone else's Express app, with a real http-proxy-middleware in front of the fake
 * upstream: the recommended wiring (jsonBody), the app's own express.json() before taskRouter (the body
 * is already consumed: requests must not hang), and no body parser at all (warned once, counted,
 * forwarded untouched).
 */
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bodyErrors, finalErrorHandler, jsonBody, loadPrompts, messageLimit, refuseAmbiguousPaths, restreamBody, SessionTracker, taskRouter, type RoutingHooks, type SessionStore, type TaskRouterOptions } from '../../middleware/index.js';
import type { PromptSet } from '../../src/index.js';
import { apiReply, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { listenOnLoopback } from '../support/listening.js';
import { closedAfterEach } from '../support/suite.js';
import { openaiClient, postJson } from './clients.js';

let upstream: FakeUpstream;
let prompts: PromptSet;

beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  prompts = await loadPrompts();
});
afterAll(async () => {
  await upstream?.close();
});
beforeEach(() => {
  upstream.reset();
  upstream.respond(apiReply('ok'));
});
const closing = closedAfterEach();

async function listen(app: Express): Promise<string> {
  return closing(await listenOnLoopback(app)).url;
}

const proxy = () => createProxyMiddleware({ target: upstream.url, changeOrigin: true, on: { proxyReq: restreamBody } });

/** A request that must be answered promptly: a hang is the failure this file is about. */
async function within<T>(promise: Promise<T>, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: the request hung`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const ACTION_BODY = { model: 'm', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'fix the failing tests in src/app.ts' }] };

describe('the recommended wiring: jsonBody, bodyErrors, taskRouter, proxy with restreamBody', () => {
  it('routes and forwards; an untouched body goes byte for byte', async () => {
    const app = express();
    app.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({ prompts }));
    app.use(proxy());
    const url = await listen(app);
    const client = openaiClient(url);
    const { response } = await within(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'fix the failing tests in src/app.ts' }] }).withResponse());
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(upstream.last().json.messages[0].content).toBe(prompts.action);
    const raw = '{"model":"m",   "messages":[{"role":"assistant","content":"hi"}]}';
    const skipped = await within(postJson(url, '/v1/chat/completions', raw));
    await skipped.arrayBuffer();
    expect(upstream.last().text).toBe(raw);
  });

  it.each([
    ['a routed chat body', '/v1/chat/completions', { model: 'm', user: 'alice@example.com', messages: [{ role: 'user', content: 'fix the failing tests in src/app.ts' }] }],
    ['a chat body with no human turn', '/v1/chat/completions', { model: 'm', user: 'alice@example.com', messages: [{ role: 'assistant', content: 'hi' }] }],
    ['a body on another path', '/v1/embeddings', { model: 'e', user: 'alice@example.com', input: 'hello' }],
  ])('%s the app replaces after taskRouter goes upstream as the app left it', async (_name, path, body) => {
    const app = express();
    app.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({ prompts }), (req: Request, _res: Response, next: NextFunction) => {
      const { user: _dropped, ...rest } = req.body as Record<string, unknown>;
      req.body = { ...rest, max_tokens: 100 };
      next();
    });
    app.use(proxy());
    const url = await listen(app);
    const answer = await within(postJson(url, path, body));
    await answer.arrayBuffer();
    expect(upstream.last().json).not.toHaveProperty('user');
    expect(upstream.last().json.max_tokens).toBe(100);
  });
});

describe('the app’s own express.json() before taskRouter', () => {
  let url: string;
  beforeEach(async () => {
    const app = express();
    app.use(express.json({ limit: '1mb' }));
    app.use('/v1', taskRouter({ prompts }));
    app.use(proxy());
    url = await listen(app);
  });

  it('a routed request is answered, not left hanging, with the rewritten body upstream', async () => {
    const response = await within(postJson(url, '/v1/chat/completions', ACTION_BODY));
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    const seen = upstream.last();
    expect(seen.json.messages[0]).toEqual({ role: 'system', content: prompts.action });
    expect(Number(seen.headers['content-length'])).toBe(Buffer.byteLength(seen.text));
  });

  it('a body taskRouter left alone is sent again as the same JSON', async () => {
    const body = { model: 'm', messages: [{ role: 'assistant', content: 'hi' }] };
    const response = await within(postJson(url, '/v1/chat/completions', body));
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBeNull();
    expect(upstream.last().json).toEqual(body);
  });

  it('another JSON path the app parsed is not left hanging either', async () => {
    upstream.respond((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"object":"list","data":[]}');
    });
    const response = await within(postJson(url, '/v1/embeddings', { model: 'e', input: 'hello' }));
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(upstream.last().json).toEqual({ model: 'e', input: 'hello' });
  });

  it('streams, through the official SDK', async () => {
    const client = openaiClient(url);
    const stream = await within(client.chat.completions.create({ model: 'm', stream: true, messages: [{ role: 'user', content: 'what is a race condition?' }] }));
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe('ok');
    expect(upstream.last().json.messages[0].content).toBe(prompts.answer);
  });
});

describe('bodies the app’s other parsers read go upstream in their own type, not as JSON', () => {
  let url: string;
  let errors: Error[];
  beforeEach(async () => {
    errors = [];
    const app = express();
    app.use(express.raw({ type: 'application/octet-stream' }));
    app.use(express.text({ type: 'text/plain' }));
    app.use('/extended', express.urlencoded({ extended: true }));
    app.use(express.urlencoded({ extended: false }));
    app.use(['/v1', '/extended/v1'], taskRouter({ prompts }));
    app.use(createProxyMiddleware({ target: upstream.url, on: { proxyReq: restreamBody, error: (error, _req, res) => {
      errors.push(error);
      (res as Response).status(502).json({ error: { message: error.message } });
    } } }));
    url = await listen(app);
  });

  const send = async (path: string, type: string, body: string | Uint8Array) => {
    const response = await within(fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': type }, body: typeof body === 'string' ? body : new Uint8Array(body) }));
    await response.arrayBuffer();
    return response;
  };

  it('express.raw(): a Buffer goes as its bytes, under its own content type', async () => {
    const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01, 0xff]);
    expect((await send('/v1/files', 'application/octet-stream', bytes)).status).toBe(200);
    expect(upstream.last().body.equals(bytes)).toBe(true);
    expect(upstream.last().headers['content-type']).toBe('application/octet-stream');
    expect(upstream.last().headers['content-length']).toBe(String(bytes.length));
  });

  it('express.text(): a string goes as its UTF-8 bytes, its charset said to be utf-8', async () => {
    expect((await send('/v1/notes', 'text/plain', 'héllo wörld')).status).toBe(200);
    expect(upstream.last().text).toBe('héllo wörld');
    expect(upstream.last().headers['content-type']).toBe('text/plain');
    // Sent as Latin-1, read by express.text() as such, sent on as UTF-8 and labelled so.
    expect((await send('/v1/notes', 'text/plain; charset=iso-8859-1', Buffer.from('héllo', 'latin1'))).status).toBe(200);
    expect(upstream.last().text).toBe('héllo');
    expect(upstream.last().headers['content-type']).toBe('text/plain; charset=utf-8');
  });

  it('express.urlencoded(): a flat form goes as a form again', async () => {
    expect((await send('/v1/form', 'application/x-www-form-urlencoded', 'a=1&b=two+words&a=3')).status).toBe(200);
    expect(upstream.last().headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(new URLSearchParams(upstream.last().text).getAll('a')).toEqual(['1', '3']);
    expect(new URLSearchParams(upstream.last().text).get('b')).toBe('two words');
  });

  it('a nested form (urlencoded extended) is refused with an error naming the field, not sent as JSON', async () => {
    const response = await send('/extended/v1/form', 'application/x-www-form-urlencoded', 'user[name]=ann');
    expect(response.status).toBe(502);
    expect(errors.map((error) => error.message)).toEqual([expect.stringMatching(/field "user" holds an object.*express\.urlencoded\(\{ extended: false \}\)/)]);
    expect(upstream.requests).toHaveLength(0);
  });
});

describe('a body restreamBody cannot send fails its own request, never the process', () => {
  /** 10 KB of JSON that JSON.parse reads and JSON.stringify cannot write again (it recurses too deep). */
  const NESTED = `{"model":"m","messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(5000)}${']'.repeat(5000)}}`;

  it.each(['/v1/chat/completions', '/v1/embeddings'])('a body nested too deeply for JSON.stringify, parsed by express.json(), on %s', async (path) => {
    const app = express();
    app.use(express.json());
    app.use('/v1', taskRouter({ prompts }));
    app.use(proxy());
    const url = await listen(app);
    const failed = await within(postJson(url, path, NESTED));
    await failed.arrayBuffer();
    expect(failed.status).toBe(500);
    expect(upstream.requests).toHaveLength(0);
    // The process and the server are still serving.
    const next = await within(postJson(url, '/v1/chat/completions', ACTION_BODY));
    await next.arrayBuffer();
    expect(next.status).toBe(200);
    expect(upstream.last().json.messages[0].content).toBe(prompts.action);
  });

  it.each([
    ['a BigInt', () => ({ model: 'm', seed: 1n })],
    ['a cycle', () => {
      const body: Record<string, unknown> = { model: 'm' };
      body.self = body;
      return body;
    }],
  ])('a req.body the app set holding %s', async (_name, make) => {
    const errors: Error[] = [];
    const app = express();
    app.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({ prompts }), (req: Request, _res: Response, next: NextFunction) => {
      req.body = make();
      next();
    });
    app.use(createProxyMiddleware({ target: upstream.url, on: { proxyReq: restreamBody, error: (error, _req, res) => {
      errors.push(error);
      (res as Response).status(502).json({ error: { message: error.message } });
    } } }));
    const url = await listen(app);
    const failed = await within(postJson(url, '/v1/chat/completions', ACTION_BODY));
    expect(failed.status).toBe(502);
    expect(((await failed.json()) as { error: { message: string } }).error.message).toMatch(/^req\.body cannot be sent upstream: JSON\.stringify failed/);
    expect(errors.map((error) => error.name)).toEqual(['UnsendableBodyError']);
    expect(upstream.requests).toHaveLength(0);
  });

  it.each([
    ['jsonBody', () => jsonBody(1024 * 1024)],
    ['express.json()', () => express.json()],
  ])('req.body = undefined after %s sends an empty body with Content-Length 0, not one the upstream waits for', async (_name, parser) => {
    const app = express();
    app.use('/v1', parser(), (req: Request, _res: Response, next: NextFunction) => {
      req.body = undefined;
      next();
    });
    app.use(proxy());
    const url = await listen(app);
    const response = await within(postJson(url, '/v1/embeddings', { model: 'e', input: 'hello' }));
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    const seen = upstream.last();
    expect(seen.headers['content-length']).toBe('0');
    expect(seen.headers['content-type']).toBeUndefined();
    expect(seen.body.length).toBe(0);
  });
});

/**
 * Collects the unhandled rejections raised while `run` runs (and a few turns after): with a listener
 * the process survives them, so a test can say which there were instead of dying of the first.
 */
async function unhandledRejectionsOf(run: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', listener);
  try {
    await run();
    for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('unhandledRejection', listener);
  }
  return seen;
}

describe('async observers that reject', () => {
  it('every hook and warn may be async: a rejection is swallowed like a throw, and the request is answered', async () => {
    const called: string[] = [];
    const failing = (name: string) => async () => {
      called.push(name);
      throw new Error(`${name} backend down`);
    };
    const brokenStore: SessionStore = { get: () => Promise.reject(new Error('store down')), set: () => undefined, delete: () => undefined };
    const hooks: RoutingHooks = { decision: failing('decision'), skip: failing('skip'), fallback: failing('fallback'), override: failing('override') };
    const parsed = express();
    parsed.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({
      prompts,
      hooks,
      overridesOpen: true,
      sessions: new SessionTracker({ header: 'x-session', maxTasks: 4, maxDecisions: 8 }, brokenStore),
    }));
    parsed.use(proxy());
    const unparsed = express();
    unparsed.use('/v1', taskRouter({ prompts, warn: failing('warn') }));
    unparsed.use(createProxyMiddleware({ target: upstream.url, on: { proxyReq: restreamBody } }));
    const url = await listen(parsed);
    const otherUrl = await listen(unparsed);
    const rejections = await unhandledRejectionsOf(async () => {
      const sent: [string, string, unknown, Record<string, string>][] = [
        [url, '/v1/chat/completions', ACTION_BODY, { 'x-session': 's1', 'x-task-router-override': 'ANSWER' }],
        [url, '/v1/chat/completions', { model: 'm', messages: [{ role: 'assistant', content: 'hi' }] }, {}],
        [otherUrl, '/v1/chat/completions', ACTION_BODY, {}],
      ];
      for (const [base, path, body, headers] of sent) {
        const response = await within(postJson(base, path, body, headers));
        await response.arrayBuffer();
        expect(response.status).toBe(200);
      }
    });
    expect(called.sort()).toEqual(['decision', 'fallback', 'override', 'skip', 'warn']);
    expect(rejections).toEqual([]);
  });
});

describe('mounted at the endpoint itself', () => {
  const USER_TURN = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'fix the failing tests in src/app.ts' }] };

  it.each([
    ['/v1/chat/completions', '/v1/chat/completions', 'openai-chat'],
    ['/v1/chat', '/v1/chat/completions', 'openai-chat'],
    ['/v1/messages', '/v1/messages', 'anthropic'],
    ['/v1/responses', '/v1/responses', 'openai-responses'],
  ])('taskRouter mounted at %s routes %s', async (mount, path, format) => {
    const app = express();
    app.use(mount, jsonBody(1024 * 1024), bodyErrors, taskRouter({ prompts }));
    app.use(proxy());
    const url = await listen(app);
    const body = format === 'openai-responses' ? { model: 'm', input: 'fix the failing tests in src/app.ts' } : USER_TURN;
    const response = await within(postJson(url, path, body));
    await response.arrayBuffer();
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    const seen = upstream.last().json;
    const system = format === 'anthropic' ? seen.system : format === 'openai-responses' ? seen.instructions : seen.messages[0].content;
    expect(system).toBe(prompts.action);
  });

  it('bodyErrors, messageLimit and finalErrorHandler answer in the mounted endpoint’s API shape', async () => {
    const app = express();
    app.use('/v1/messages', jsonBody(1024 * 1024), bodyErrors, messageLimit(2), taskRouter({ prompts }), (_req: Request, _res: Response, next: NextFunction) => {
      next(new Error('the host failed'));
    }, finalErrorHandler());
    const url = await listen(app);
    const badJson = await within(postJson(url, '/v1/messages', '{"model":'));
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const tooMany = await within(postJson(url, '/v1/messages', { ...USER_TURN, messages: [...USER_TURN.messages, ...USER_TURN.messages, ...USER_TURN.messages] }));
    expect(tooMany.status).toBe(413);
    expect(await tooMany.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
    const failed = await within(postJson(url, '/v1/messages', USER_TURN));
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
  });

  it('bodyErrors and finalErrorHandler answer Anthropic\'s other endpoints in Anthropic\'s shape', async () => {
    const app = express();
    app.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({ prompts }), (req: Request, _res: Response, next: NextFunction) => {
      next(req.path.endsWith('/cancel') ? new Error('the host failed') : undefined);
    });
    app.use(proxy());
    app.use(finalErrorHandler());
    const url = await listen(app);
    const badJson = await within(postJson(url, '/v1/messages/count_tokens', '{"model":'));
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const failed = await within(postJson(url, '/v1/messages/batches/msgbatch_01/cancel', {}));
    expect(failed.status).toBe(500);
    expect(await failed.json()).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    const openaiBadJson = await within(postJson(url, '/v1/embeddings', '{"model":'));
    expect(openaiBadJson.status).toBe(400);
    expect(await openaiBadJson.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_request' } });
  });

  it('refuseAmbiguousPaths mounted below the root reads the chat route from the whole path', async () => {
    const app = express();
    app.use('/v1/chat', refuseAmbiguousPaths());
    app.use(proxy());
    const url = await listen(app);
    const refused = await within(postJson(url, '/v1/chat/%63ompletions', USER_TURN));
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain('send it as /v1/chat/completions');
    expect(upstream.requests).toHaveLength(0);
  });
});

describe('taskRouter checks its options when it is made', () => {
  const shipped = () => prompts;
  it.each([
    ['a misspelled strategy', () => ({ prompts: shipped(), strategy: 'prepnd' }), /strategy: expected one of replace, prepend, append, got "prepnd"/],
    ['hardRouting read from the environment as text', () => ({ prompts: shipped(), hardRouting: 'false' }), /hardRouting: expected true or false, got "false"/],
    ['allowOverride as a number', () => ({ prompts: shipped(), allowOverride: 1 }), /allowOverride: expected true or false, got 1/],
    ['overridesOpen as text', () => ({ prompts: shipped(), overridesOpen: 'yes' }), /overridesOpen: expected true or false, got "yes"/],
    ['a prompt set missing prompts', () => ({ prompts: { answer: 'A', action: 'B' } }), /prompts\.toolSpecialist: expected the toolSpecialist prompt \(tool-specialist\.md\) as text, got nothing \(it is missing\)/],
    ['an empty prompt', () => ({ prompts: { ...shipped(), escalate: '  ' } }), /prompts\.escalate: expected the escalate prompt \(escalate\.md\) as non-empty text, got " {2}"/],
    ['wrappers as a string', () => ({ prompts: shipped(), wrappers: 'system-reminder' }), /wrappers: expected an array of wrappers.*got "system-reminder"/],
    ['a wrapper of the wrong shape', () => ({ prompts: shipped(), wrappers: [{ agent: 'x', tag: 'a b', action: 'drop' }] }), /wrappers\.0\.tag: an element name of letters.*, got "a b"/],
    ['a hook that is not a function', () => ({ prompts: shipped(), hooks: { decision: 'log' } }), /hooks\.decision: expected a function, got "log"/],
    ['hooks that are not an object', () => ({ prompts: shipped(), hooks: 'log' }), /hooks: expected an object of functions \(decision, skip, fallback, override\), got "log"/],
    ['a misspelled option', () => ({ prompts: shipped(), hardrouting: false }), /hardrouting: not an option of taskRouter/],
  ])('refuses %s, naming the option, what was given and what is expected', (_name, options, message) => {
    expect(() => taskRouter(options() as TaskRouterOptions)).toThrow(message);
  });

  it('takes every option given rightly, and routes with them', async () => {
    const decisions: string[] = [];
    const app = express();
    app.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({
      prompts,
      strategy: 'prepend',
      hardRouting: true,
      allowOverride: true,
      overridesOpen: false,
      overrideToken: 'secret',
      wrappers: [{ agent: 'test', tag: 'noise', action: 'drop' }],
      hooks: { decision: (decision) => decisions.push(decision.mode) },
      warn: () => undefined,
      responseChain: { entries: 8, characters: 1024 },
    }));
    app.use(proxy());
    const url = await listen(app);
    const response = await within(postJson(url, '/v1/chat/completions', { model: 'm', messages: [{ role: 'user', content: '<noise>what is a mutex?</noise> fix the failing tests in src/app.ts' }] }));
    await response.arrayBuffer();
    expect(decisions).toEqual(['ACTION']);
    expect(upstream.last().json.messages[0].content).toBe(prompts.action);
  });
});

describe('no body parser before taskRouter', () => {
  it('warns once, counts every such request, and forwards the body untouched', async () => {
    const warnings: string[] = [];
    const skips: string[] = [];
    const hooks: RoutingHooks = { skip: (reason) => skips.push(reason) };
    const app = express();
    app.use('/v1', taskRouter({ prompts, hooks, warn: (message) => warnings.push(message) }));
    app.use(proxy());
    const url = await listen(app);
    for (let sent = 0; sent < 3; sent += 1) {
      const response = await within(postJson(url, '/v1/chat/completions', ACTION_BODY));
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      expect(response.headers.get('x-task-router-mode')).toBeNull();
      expect(upstream.last().text).toBe(JSON.stringify(ACTION_BODY));
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/req\.body is not set.*jsonBody\(\)/);
    expect(skips).toEqual(['no_body_parser', 'no_body_parser', 'no_body_parser']);
  });

  it('the default warning goes through process.emitWarning', async () => {
    const seen: Error[] = [];
    const listener = (warning: Error) => seen.push(warning);
    process.on('warning', listener);
    try {
      const app = express();
      app.use('/v1', taskRouter({ prompts }));
      app.use(proxy());
      const url = await listen(app);
      await (await within(postJson(url, '/v1/chat/completions', ACTION_BODY))).arrayBuffer();
      await (await within(postJson(url, '/v1/chat/completions', ACTION_BODY))).arrayBuffer();
      await new Promise((resolve) => setImmediate(resolve));
      const ours = seen.filter((warning) => (warning as Error & { code?: string }).code === 'TASK_ROUTER_NO_BODY_PARSER');
      expect(ours).toHaveLength(1);
    } finally {
      process.off('warning', listener);
    }
  });

  it('an empty POST is not mistaken for a missing parser', async () => {
    const warnings: string[] = [];
    const skips: string[] = [];
    const app = express();
    app.use('/v1', jsonBody(1024), bodyErrors, taskRouter({ prompts, hooks: { skip: (reason) => skips.push(reason) }, warn: (message) => warnings.push(message) }));
    app.use(proxy());
    const url = await listen(app);
    const response = await within(fetch(`${url}/v1/chat/completions`, { method: 'POST' }));
    await response.arrayBuffer();
    expect(warnings).toEqual([]);
    expect(skips).toHaveLength(1);
    expect(skips).not.toContain('no_body_parser');
  });
});

describe('Responses chains in a host app that answers itself', () => {
  const startChain = (app: Express, seen: unknown[]) => {
    let next = 0;
    app.post('/v1/responses', (req: Request, res: Response) => {
      seen.push(req.body.instructions);
      next += 1;
      // Written in two pieces, as a host streaming its own answer would.
      res.status(200).type('application/json');
      res.write(`{"id":"resp_host${next}",`);
      res.end('"object":"response","output":[]}');
    });
  };

  it.each([
    ['routes a tool-output continuation as the chain\'s first request', {}, 'action'],
    ['with responseChain: false, leaves it unrouted', { responseChain: false as const }, null],
  ] as const)('%s', async (_name, options, route) => {
    const seen: unknown[] = [];
    const app = express();
    app.use('/v1', jsonBody(1024 * 1024), bodyErrors, taskRouter({ prompts, ...options }));
    startChain(app, seen);
    const url = await listen(app);
    const first = (await (await within(postJson(url, '/v1/responses', { model: 'm', input: 'fix the failing tests in src/app.ts' }))).json()) as { id: string };
    await (await within(postJson(url, '/v1/responses', { model: 'm', previous_response_id: first.id, input: [{ type: 'function_call_output', call_id: 'c1', output: 'ok' }] }))).arrayBuffer();
    expect(seen).toEqual([prompts.action, route === null ? undefined : prompts.action]);
  });
});
