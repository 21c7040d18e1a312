/**
 * Fake LLM upstream for bench/gateway.ts: node:http on 127.0.0.1, keep-alive, answering
 * POST /v1/chat/completions with a small OpenAI chat completion (no artificial delay), or, when the body
 * has "stream": true, with SSE: SSE_CHUNKS chunks SSE_GAP_MS apart (the first one at once), then [DONE].
 *
 * The reply names the decision headers and the first characters of the system prompt it received, so the
 * bench can show the gateway really routed and swapped the prompt.
 *
 * Run as a child of bench/gateway.ts (forked with IPC) it sends { url } when listening, answers
 * { type: 'cpu' } with its process.cpuUsage(), and closes on { type: 'close' } so the process exits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

export const CHAT_PATH = '/v1/chat/completions';
export const SSE_CHUNKS = 5;
export const SSE_GAP_MS = 20;

export interface FakeUpstream {
  readonly url: string;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

let sequence = 0;

function systemPrefix(body: Json): string {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const first = messages[0] as Json | undefined;
  if (!first || (first.role !== 'system' && first.role !== 'developer')) return '(none)';
  const content = typeof first.content === 'string' ? first.content : JSON.stringify(first.content);
  return content.replace(/\s+/g, ' ').slice(0, 48);
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

function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): void {
  if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== CHAT_PATH) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"not found","type":"invalid_request_error","param":null,"code":"not_found"}}');
    return;
  }
  let body: Json;
  try {
    body = JSON.parse(raw.toString('utf8')) as Json;
  } catch {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"body is not JSON","type":"invalid_request_error","param":null,"code":null}}');
    return;
  }
  const id = `chatcmpl-bench${(sequence += 1)}`;
  const model = typeof body.model === 'string' ? body.model : 'bench';
  const mode = req.headers['x-task-router-mode'] ?? 'none';
  const text = `mode=${String(mode)}; system="${systemPrefix(body)}"`;

  if (body.stream !== true) {
    const payload = completion(id, model, text);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    res.end(payload);
    return;
  }

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
  }, SSE_GAP_MS);
  res.once('close', () => clearInterval(timer));
}

/** Starts the fake upstream on host:0. */
export async function startFakeUpstream(host = '127.0.0.1'): Promise<FakeUpstream> {
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
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

// As a forked child: serve, report CPU on demand, close on request.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) {
  const upstream = await startFakeUpstream('127.0.0.1');
  process.on('message', (message: { type?: string }) => {
    if (message?.type === 'cpu') process.send?.({ type: 'cpu', usage: process.cpuUsage() });
    if (message?.type === 'close') {
      void upstream.close().then(() => process.disconnect());
    }
  });
  process.send({ type: 'ready', url: upstream.url });
}
