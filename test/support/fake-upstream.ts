/**
 * Test support for the gateway's integration tests: a scriptable fake LLM upstream (a real node:http
 * server on 127.0.0.1:0 that records every request) and a helper that starts the real gateway in front
 * of it. Nothing here mocks Express, the proxy or the network.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import { createGatewayApp, buildSnapshot, type GatewayAppOptions } from '../../gateway/app.js';
import { loadConfig, DEFAULT_CONFIG_FILE } from '../../gateway/config.js';
import type { RoutingSnapshot } from '../../middleware/task-router.js';
import type { PromptSet, Strategy } from '../../src/index.js';
import { listenOnLoopback } from './listening.js';

// ---------------------------------------------------------------------------------------------------
// Recorded requests
// ---------------------------------------------------------------------------------------------------

export interface RecordedRequest {
  readonly index: number;
  readonly method: string;
  /** Path and query string exactly as received. */
  readonly url: string;
  readonly path: string;
  readonly query: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
  /** The body bytes as they arrived. */
  readonly body: Buffer;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: any JSON the client sent; tests read it by path and assert what they find
  readonly json: any;
  readonly socket: Socket;
  readonly receivedAt: number;
  /** performance.now() of every body chunk the fake wrote to the response (for stream timing). */
  readonly writes: number[];
  /** Whether this request's socket has closed. */
  socketClosed(): boolean;
  /** Resolves with performance.now() when the socket carrying this request closes. */
  readonly closed: Promise<number>;
}

/** What the fake does with one request. It may write, delay, reset or never finish. */
export type Behaviour = (req: RecordedRequest, res: http.ServerResponse) => void | Promise<void>;

export interface FakeUpstream {
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Sets the behaviour for every following request (until changed). */
  respond(behaviour: Behaviour): void;
  /** Queues a behaviour for the next request only; queued ones are used before the default. */
  respondOnce(behaviour: Behaviour): void;
  /** The last request received; throws when there was none. */
  last(): RecordedRequest;
  /** Waits until `count` requests have arrived in total. */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Sockets currently open towards the fake. */
  openSockets(): number;
  /** Forgets recorded requests (the behaviour stays). */
  reset(): void;
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Writes one piece of a response body and stamps its time on the request record. */
function writeStamped(req: RecordedRequest, res: http.ServerResponse, chunk: string | Buffer): void {
  req.writes.push(performance.now());
  res.write(chunk);
}

/** Sends a TCP reset where the platform can, else destroys the socket. */
function resetSocket(socket: Socket): void {
  const withReset = socket as Socket & { resetAndDestroy?: () => Socket };
  if (typeof withReset.resetAndDestroy === 'function') withReset.resetAndDestroy();
  else socket.destroy();
}

interface SocketWatch {
  closed: boolean;
  readonly promise: Promise<number>;
}
const socketWatches = new WeakMap<Socket, SocketWatch>();

/** One close listener per socket, shared by the requests a keep-alive socket carries. */
function socketWatch(socket: Socket): SocketWatch {
  let watch = socketWatches.get(socket);
  if (!watch) {
    let resolveClosed!: (at: number) => void;
    const created: SocketWatch = { closed: socket.destroyed, promise: new Promise<number>((resolve) => { resolveClosed = resolve; }) };
    if (socket.destroyed) resolveClosed(performance.now());
    else socket.once('close', () => {
      created.closed = true;
      resolveClosed(performance.now());
    });
    socketWatches.set(socket, created);
    watch = created;
  }
  return watch;
}

export async function startFakeUpstream(initial?: Behaviour): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const queued: Behaviour[] = [];
  let behaviour: Behaviour = initial ?? apiReply('fake upstream reply');
  const sockets = new Set<Socket>();
  const waiters: { count: number; resolve: () => void }[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const text = body.toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const url = req.url ?? '/';
      const [path = '/', ...rest] = url.split('?');
      const socket = req.socket;
      const watch = socketWatch(socket);
      const record: RecordedRequest = {
        index: requests.length,
        method: req.method ?? 'GET',
        url,
        path,
        query: rest.join('?'),
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
        text,
        json,
        socket,
        receivedAt: performance.now(),
        writes: [],
        socketClosed: () => watch.closed,
        closed: watch.promise,
      };
      requests.push(record);
      for (const waiter of [...waiters]) {
        if (requests.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      const chosen = queued.shift() ?? behaviour;
      Promise.resolve()
        .then(() => chosen(record, res))
        .catch((error: unknown) => {
          if (!res.headersSent && !res.destroyed) {
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end(`fake upstream behaviour failed: ${String(error)}`);
          }
        });
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // Keep-alive sockets of the gateway's agent must not hold the test open.
  server.keepAliveTimeout = 5_000;
  const listening = await listenOnLoopback(server);

  return {
    url: listening.url,
    port: listening.port,
    requests,
    respond(next) {
      behaviour = next;
    },
    respondOnce(next) {
      queued.push(next);
    },
    last() {
      const request = requests[requests.length - 1];
      if (!request) throw new Error('the fake upstream has received no request');
      return request;
    },
    waitForRequests(count, timeoutMs = 5_000) {
      if (requests.length >= count) return Promise.resolve(requests);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the fake upstream received ${requests.length} of ${count} requests within ${timeoutMs} ms`)), timeoutMs);
        timers.add(timer);
        waiters.push({ count, resolve: () => { clearTimeout(timer); resolve(requests); } });
      });
    },
    openSockets: () => sockets.size,
    reset() {
      requests.length = 0;
      queued.length = 0;
    },
    close: () => {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      return listening.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Replies in each API's own shape (the shapes the official SDKs accept; see middleware/echo-upstream.ts)
// ---------------------------------------------------------------------------------------------------

export type ApiName = 'openai-chat' | 'anthropic' | 'openai-responses';

export function apiOfPath(path: string): ApiName | null {
  const clean = path.split('?')[0]?.replace(/\/+$/, '') ?? '';
  if (clean.endsWith('/chat/completions')) return 'openai-chat';
  if (clean.endsWith('/messages')) return 'anthropic';
  if (clean.endsWith('/responses')) return 'openai-responses';
  return null;
}

export function openaiChatCompletion(text: string, model = 'fake-model'): object {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

export function anthropicMessage(text: string, model = 'fake-model'): object {
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  };
}

function responsesObject(status: 'in_progress' | 'completed', text: string, model: string): object {
  const output = status === 'completed'
    ? [{ type: 'message', id: 'msg_fake', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }]
    : [];
  return {
    id: 'resp_fake',
    object: 'response',
    created_at: 1_700_000_000,
    status,
    model,
    output,
    usage: status === 'completed'
      ? { input_tokens: 1, output_tokens: 1, total_tokens: 2, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } }
      : null,
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: true,
    temperature: null,
    tool_choice: 'auto',
    tools: [],
    top_p: null,
  };
}

export function openaiResponse(text: string, model = 'fake-model'): object {
  return responsesObject('completed', text, model);
}

/** Splits a reply into pieces so a stream has several deltas. */
export function pieces(text: string, count = 3): string[] {
  if (text.length < count) return [text];
  const size = Math.ceil(text.length / count);
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}

const event = (name: string | null, data: unknown) =>
  `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** SSE events (one string per event) of a streamed reply in the API's own shape. */
export function sseEvents(api: ApiName, text: string, model = 'fake-model'): string[] {
  const deltas = pieces(text);
  if (api === 'openai-chat') {
    const chunk = (delta: object, finish: string | null) => ({
      id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    return [
      event(null, chunk({ role: 'assistant', content: '' }, null)),
      ...deltas.map((piece) => event(null, chunk({ content: piece }, null))),
      event(null, chunk({}, 'stop')),
      event(null, '[DONE]'),
    ];
  }
  if (api === 'anthropic') {
    return [
      event('message_start', { type: 'message_start', message: { id: 'msg_fake', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 0 } } }),
      event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      ...deltas.map((piece) => event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } })),
      event('content_block_stop', { type: 'content_block_stop', index: 0 }),
      event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 1 } }),
      event('message_stop', { type: 'message_stop' }),
    ];
  }
  let sequence = 0;
  const typed = (type: string, data: object) => event(type, { type, sequence_number: sequence++, ...data });
  const part = { type: 'output_text', text, annotations: [] };
  const item = { type: 'message', id: 'msg_fake', status: 'completed', role: 'assistant', content: [part] };
  return [
    typed('response.created', { response: responsesObject('in_progress', text, model) }),
    typed('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
    typed('response.content_part.added', { item_id: 'msg_fake', output_index: 0, content_index: 0, part: { ...part, text: '' } }),
    ...deltas.map((delta) => typed('response.output_text.delta', { item_id: 'msg_fake', output_index: 0, content_index: 0, delta, logprobs: [] })),
    typed('response.output_text.done', { item_id: 'msg_fake', output_index: 0, content_index: 0, text, logprobs: [] }),
    typed('response.content_part.done', { item_id: 'msg_fake', output_index: 0, content_index: 0, part }),
    typed('response.output_item.done', { output_index: 0, item }),
    typed('response.completed', { response: responsesObject('completed', text, model) }),
  ];
}

export function jsonReplyFor(api: ApiName, text: string): object {
  if (api === 'anthropic') return anthropicMessage(text);
  if (api === 'openai-responses') return openaiResponse(text);
  return openaiChatCompletion(text);
}

// ---------------------------------------------------------------------------------------------------
// Behaviours
// ---------------------------------------------------------------------------------------------------

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } as const;

/** A status and a JSON body (any shape), with extra headers. */
export function replyJson(status: number, body: unknown, headers: Record<string, string> = {}): Behaviour {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
}

/** A status and body bytes exactly as given. */
export function replyRaw(status: number, body: string | Buffer, headers: Record<string, string> = {}): Behaviour {
  return (_req, res) => {
    res.writeHead(status, headers);
    res.end(body);
  };
}

export interface SseOptions {
  /** Delay between events, in ms (also before the first event after the headers, and before a cut). */
  delayMs?: number;
  /** Write the headers and this many events, then reset the connection (TCP RST). */
  resetAfter?: number;
  /** Write the headers and this many events, then close the connection (FIN) without finishing the response. */
  closeAfter?: number;
  /** Write every event and then never end the response. */
  neverEnd?: boolean;
  status?: number;
  headers?: Record<string, string>;
}

/** An SSE stream sent event by event, with a delay between events. */
export function replySse(events: readonly string[], options: SseOptions = {}): Behaviour {
  return async (req, res) => {
    res.writeHead(options.status ?? 200, { ...SSE_HEADERS, ...options.headers });
    res.flushHeaders();
    const cutAfter = options.resetAfter ?? options.closeAfter;
    const cut = () => {
      if (options.resetAfter !== undefined) resetSocket(req.socket);
      else req.socket.destroy();
    };
    for (const [index, data] of events.entries()) {
      if (options.delayMs) await sleep(options.delayMs);
      if (res.destroyed || req.socketClosed()) return;
      if (cutAfter !== undefined && index >= cutAfter) return cut();
      writeStamped(req, res, data);
    }
    if (cutAfter !== undefined) {
      if (options.delayMs) await sleep(options.delayMs);
      return cut();
    }
    if (!options.neverEnd) res.end();
  };
}

/**
 * Answers in the API's own shape, chosen by the request path and `stream` in its body: JSON when
 * not streamed, SSE events (optionally `delayMs` apart) when streamed.
 */
export function apiReply(text: string, options: SseOptions = {}): Behaviour {
  return (req, res) => {
    const api = apiOfPath(req.path) ?? 'openai-chat';
    if (req.json?.stream === true) return replySse(sseEvents(api, text), options)(req, res);
    return replyJson(options.status ?? 200, jsonReplyFor(api, text), options.headers)(req, res);
  };
}

/** Waits before sending anything (headers included), then behaves as `then`. */
export function delayThen(ms: number, then: Behaviour): Behaviour {
  return async (req, res) => {
    await sleep(ms);
    if (req.socketClosed()) return;
    await then(req, res);
  };
}

/** Resets the connection before any response header. */
export function resetBeforeHeaders(): Behaviour {
  return (req) => resetSocket(req.socket);
}

/** Sends the headers and never a byte more. */
export function neverRespondAfterHeaders(): Behaviour {
  return (_req, res) => {
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
  };
}

// ---------------------------------------------------------------------------------------------------
// The gateway under test
// ---------------------------------------------------------------------------------------------------

export interface GatewayOverrides {
  strategy?: Strategy;
  hardRouting?: boolean;
  allowOverride?: boolean;
  /** routing.overrideToken; without it (or overridesOpen) a forcing override gets a 403. */
  overrideToken?: string;
  overridesOpen?: boolean;
  timeoutMs?: number;
  bodyBytes?: number;
  maxSockets?: number;
  idleTimeoutMs?: number;
  maxDurationMs?: number;
  maxMessages?: number;
  hooks?: GatewayAppOptions['hooks'];
  /** A snapshot built by hand replaces the one built from config/default.yaml. */
  snapshot?: RoutingSnapshot;
}

export interface TestGateway {
  readonly url: string;
  readonly snapshot: RoutingSnapshot;
  readonly prompts: PromptSet;
  close(): Promise<void>;
}

let baseSnapshot: Promise<RoutingSnapshot> | null = null;

/** The snapshot the shipped configuration builds (rules.json and prompts/), built once per test file. */
export function defaultSnapshot(): Promise<RoutingSnapshot> {
  baseSnapshot ??= loadConfig(DEFAULT_CONFIG_FILE, {}).then(buildSnapshot);
  return baseSnapshot;
}

/** Starts the real gateway app (createGatewayApp) on 127.0.0.1:0 in front of `upstreamUrl`. */
export async function startGatewayForTest(options: { upstreamUrl: string; overrides?: GatewayOverrides }): Promise<TestGateway> {
  const overrides = options.overrides ?? {};
  const loaded = await loadConfig(DEFAULT_CONFIG_FILE, {});
  const base = overrides.snapshot ?? (await defaultSnapshot());
  const snapshot: RoutingSnapshot = {
    ...base,
    ...(overrides.strategy !== undefined ? { strategy: overrides.strategy } : {}),
    ...(overrides.hardRouting !== undefined ? { hardRouting: overrides.hardRouting } : {}),
    ...(overrides.allowOverride !== undefined ? { allowOverride: overrides.allowOverride } : {}),
    ...(overrides.overrideToken !== undefined ? { overrideToken: overrides.overrideToken } : {}),
    ...(overrides.overridesOpen !== undefined ? { overridesOpen: overrides.overridesOpen } : {}),
  };
  const gateway = createGatewayApp({
    snapshot: () => snapshot,
    upstream: {
      url: options.upstreamUrl,
      timeoutMs: overrides.timeoutMs ?? loaded.config.upstream.timeoutMs,
      maxSockets: overrides.maxSockets ?? loaded.config.upstream.maxSockets,
      idleTimeoutMs: overrides.idleTimeoutMs ?? loaded.config.upstream.idleTimeoutMs,
      maxDurationMs: overrides.maxDurationMs ?? loaded.config.upstream.maxDurationMs,
    },
    bodyBytes: overrides.bodyBytes ?? loaded.config.limits.bodyBytes,
    maxMessages: overrides.maxMessages ?? loaded.config.limits.maxMessages,
    ...(overrides.hooks ? { hooks: overrides.hooks } : {}),
  });
  const server = await listenOnLoopback(gateway.app);
  let closed = false;
  return {
    url: server.url,
    snapshot,
    prompts: snapshot.prompts,
    close: async () => {
      if (closed) return;
      closed = true;
      await server.close();
      gateway.close();
    },
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const { port, close } = await listenOnLoopback(http.createServer());
  await close();
  return port;
}

/** How many times `needle` occurs in `haystack`. */
export function occurrences(haystack: string, needle: string): number {
  if (needle === '') return 0;
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) count += 1;
  return count;
}

/** How many copies of a prompt a raw JSON body carries (the prompt as it appears JSON-escaped). */
export function promptCopies(rawJson: string, prompt: string): number {
  return occurrences(rawJson, JSON.stringify(prompt).slice(1, -1));
}
