/**
 * Fake LLM upstream for bench/gateway.ts: node:http on 127.0.0.1, keep-alive, answering
 * POST /v1/chat/completions with a small OpenAI chat completion (no artificial delay), or, when the body
 * has "stream": true, with SSE: SSE_CHUNKS chunks sseGapMs apart (the first one at once), then [DONE].
 *
 * The reply names the decision header, the first characters of the system prompt it received and of the
 * latest user turn, so the bench can show each setup delivered the body and the gateway swapped the prompt.
 * It also tallies what it received (requests, streams, bodies that are not a chat body, distinct latest
 * turns, system prompts by their first line), so the bench can check every setup really reached it.
 *
 * Run as a child of bench/gateway.ts (forked with IPC, optional --sse-gap-ms N) it sends { type: 'ready',
 * url } when listening, answers { type: 'stats' } with the tallies since the last ask (and starts new
 * ones), { type: 'cpu' } with its process.cpuUsage(), and closes on { type: 'close' } so the process exits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export const CHAT_PATH = '/v1/chat/completions';
export const SSE_CHUNKS = 5;
export const SSE_GAP_MS = 20;

export interface UpstreamStats {
  /** Chat requests answered. */
  readonly requests: number;
  readonly streamed: number;
  /** Requests whose body was not JSON with a messages array ending in a user turn with text. */
  readonly badBodies: number;
  /** Distinct latest user turns (up to MAX_DISTINCT, then distinctCapped). */
  readonly distinctTurns: number;
  readonly distinctCapped: boolean;
  /** Requests by the first line of the system prompt they carried (at most MAX_PROMPTS lines, then "(other)"). */
  readonly systemPrompts: Readonly<Record<string, number>>;
}

export interface FakeUpstream {
  readonly url: string;
  /** Tallies since the last call; starts new ones. */
  stats(): UpstreamStats;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  readonly host?: string;
  readonly sseGapMs?: number;
}

type Json = Record<string, unknown>;

const MAX_DISTINCT = 1_000_000;
const MAX_PROMPTS = 16;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof (part as Json)?.text === 'string' ? (part as Json).text as string : '')).join('');
  return '';
}

function systemOf(messages: readonly unknown[]): string | null {
  const first = messages[0] as Json | undefined;
  if (!first || (first.role !== 'system' && first.role !== 'developer')) return null;
  return textOf(first.content);
}

function completion(id: string, model: string, content: string): string {
  return JSON.stringify({
    id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 812, completion_tokens: 9, total_tokens: 821 },
  });
}

function chunk(id: string, model: string, delta: Json, finish: string | null): string {
  return `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
}

class Tally {
  requests = 0;
  streamed = 0;
  badBodies = 0;
  distinctCapped = false;
  readonly turns = new Set<string>();
  readonly prompts = new Map<string, number>();

  prompt(system: string | null): void {
    let key = system === null ? '(no system prompt)' : system.split('\n', 1)[0]!.slice(0, 60);
    if (!this.prompts.has(key) && this.prompts.size >= MAX_PROMPTS) key = '(other)';
    this.prompts.set(key, (this.prompts.get(key) ?? 0) + 1);
  }

  turn(text: string): void {
    if (this.turns.size < MAX_DISTINCT) this.turns.add(text);
    else if (!this.turns.has(text)) this.distinctCapped = true;
  }

  snapshot(): UpstreamStats {
    return {
      requests: this.requests, streamed: this.streamed, badBodies: this.badBodies,
      distinctTurns: this.turns.size, distinctCapped: this.distinctCapped, systemPrompts: Object.fromEntries(this.prompts),
    };
  }
}

/** Starts the fake upstream on host:0. */
export async function startFakeUpstream(options: FakeUpstreamOptions | string = {}): Promise<FakeUpstream> {
  const { host = '127.0.0.1', sseGapMs = SSE_GAP_MS } = typeof options === 'string' ? { host: options } : options;
  let tally = new Tally();
  let sequence = 0;

  function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): void {
    if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== CHAT_PATH) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":"not_found"}}');
      return;
    }
    tally.requests += 1;
    let body: Json;
    try {
      body = JSON.parse(raw.toString('utf8')) as Json;
    } catch {
      tally.badBodies += 1;
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end('{"error":{"message":"body is not JSON","type":"invalid_request_error","param":null,"code":null}}');
      return;
    }
    const messages = Array.isArray(body.messages) ? (body.messages as unknown[]) : [];
    const last = messages.at(-1) as Json | undefined;
    const turn = last?.role === 'user' ? textOf(last.content) : '';
    if (turn === '') tally.badBodies += 1;
    else tally.turn(turn);
    const system = systemOf(messages);
    tally.prompt(system);

    const id = `chatcmpl-bench${(sequence += 1)}`;
    const model = typeof body.model === 'string' ? body.model : 'bench';
    const mode = req.headers['x-task-router-mode'] ?? 'none';
    const text = `mode=${String(mode)}; system="${(system ?? '(none)').replace(/\s+/g, ' ').slice(0, 40)}"; turn="${turn.slice(0, 40)}"`;

    if (body.stream !== true) {
      const payload = completion(id, model, text);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
      res.end(payload);
      return;
    }

    tally.streamed += 1;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(chunk(id, model, { role: 'assistant', content: text }, null));
    let sent = 1;
    const timer = setInterval(() => {
      sent += 1;
      if (sent < SSE_CHUNKS) {
        res.write(chunk(id, model, { content: ` part ${sent}` }, null));
        return;
      }
      clearInterval(timer);
      res.write(chunk(id, model, {}, 'stop'));
      res.end('data: [DONE]\n\n');
    }, sseGapMs);
    res.once('close', () => clearInterval(timer));
  }

  const server = http.createServer({ keepAlive: true, noDelay: true }, (req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => handle(req, res, parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
  });
  // Idle pooled sockets of the proxies must survive the pauses between runs.
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    stats: () => {
      const out = tally.snapshot();
      tally = new Tally();
      return out;
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

// As a forked child: serve, report tallies and CPU on demand, close on request.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  const gapIndex = process.argv.indexOf('--sse-gap-ms');
  const sseGapMs = gapIndex > 0 ? Number(process.argv[gapIndex + 1]) : SSE_GAP_MS;
  const upstream = await startFakeUpstream({ host: '127.0.0.1', sseGapMs: Number.isFinite(sseGapMs) && sseGapMs > 0 ? sseGapMs : SSE_GAP_MS });
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'stats') process.send?.({ type: 'stats', stats: upstream.stats() });
    if (message?.type === 'cpu') process.send?.({ type: 'cpu', usage: process.cpuUsage() });
    if (message?.type === 'close') {
      void upstream.close().then(() => process.disconnect());
    }
  });
  // The bench gone (killed, crashed): nothing will ask for a close, so leave on our own.
  process.on('disconnect', () => {
    void upstream.close().then(() => process.exit(0));
  });
  process.send({ type: 'ready', url: upstream.url });
}
