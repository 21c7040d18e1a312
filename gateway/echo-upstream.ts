import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { HEADER } from '../src/index.js';

/**
 * A stand-in LLM API for trying the gateway with nothing else installed. It answers chat requests in
 * each API's own shape, streamed or not, and its reply says which route the gateway took and the first
 * line of the system prompt it received.
 */
export interface EchoUpstream {
  readonly url: string;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('\n');
  return '';
}

function systemPrompt(path: string, body: Json): string {
  if (path.endsWith('/messages')) return textOf(body.system);
  if (path.endsWith('/responses')) return textOf(body.instructions);
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const first = messages[0] as Json | undefined;
  return first && (first.role === 'system' || first.role === 'developer') ? textOf(first.content) : '';
}

function reply(path: string, body: Json, headers: http.IncomingHttpHeaders): string {
  const firstLine = systemPrompt(path, body).split('\n').find((line) => line.trim() !== '') ?? '(none)';
  const mode = headers[HEADER.mode];
  const route = mode
    ? `${mode} (route ${headers[HEADER.route]}, confidence ${headers[HEADER.confidence]}, ${headers[HEADER.routing]} routing)`
    : 'none (no decision headers: is the gateway in front?)';
  return `[echo upstream] routed as ${route}; system prompt: ${firstLine}`;
}

function chunks(text: string): string[] {
  return text.match(/.{1,24}(\s|$)|.{1,24}/g) ?? [text];
}

function sse(res: http.ServerResponse, events: readonly [string | null, unknown][]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const [event, data] of events) res.write(`${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
  res.end();
}

function openaiChat(res: http.ServerResponse, body: Json, text: string): void {
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof body.model === 'string' ? body.model : 'echo';
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id, object: 'chat.completion', created, model,
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    }));
    return;
  }
  const chunk = (delta: Json, finish: string | null) => ({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  sse(res, [
    [null, chunk({ role: 'assistant', content: '' }, null)],
    ...chunks(text).map((piece): [null, unknown] => [null, chunk({ content: piece }, null)]),
    [null, chunk({}, 'stop')],
    [null, '[DONE]'],
  ]);
}

function anthropic(res: http.ServerResponse, body: Json, text: string): void {
  const id = `msg_${randomUUID().replaceAll('-', '')}`;
  const model = typeof body.model === 'string' ? body.model : 'echo';
  const usage = { input_tokens: 0, output_tokens: 0 };
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id, type: 'message', role: 'assistant', model, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage }));
    return;
  }
  sse(res, [
    ['message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage } }],
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
    ...chunks(text).map((piece): [string, unknown] => ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }]),
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 0 } }],
    ['message_stop', { type: 'message_stop' }],
  ]);
}

function openaiResponses(res: http.ServerResponse, body: Json, text: string): void {
  const id = `resp_${randomUUID().replaceAll('-', '')}`;
  const itemId = `msg_${randomUUID().replaceAll('-', '')}`;
  const model = typeof body.model === 'string' ? body.model : 'echo';
  const created_at = Math.floor(Date.now() / 1000);
  const part = { type: 'output_text', text, annotations: [] };
  const item = { type: 'message', id: itemId, status: 'completed', role: 'assistant', content: [part] };
  const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } };
  const response = (status: string, output: unknown[]) => ({ id, object: 'response', created_at, status, model, output, usage: status === 'completed' ? usage : null, error: null, incomplete_details: null, instructions: body.instructions ?? null, metadata: {}, parallel_tool_calls: true, temperature: null, tool_choice: 'auto', tools: [], top_p: null });
  if (body.stream !== true) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(response('completed', [item])));
    return;
  }
  let sequence_number = 0;
  const event = (type: string, data: Json): [string, unknown] => [type, { type, sequence_number: sequence_number++, ...data }];
  sse(res, [
    event('response.created', { response: response('in_progress', []) }),
    event('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
    event('response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part: { ...part, text: '' } }),
    ...chunks(text).map((delta) => event('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta, logprobs: [] })),
    event('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [] }),
    event('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part }),
    event('response.output_item.done', { output_index: 0, item }),
    event('response.completed', { response: response('completed', [item]) }),
  ]);
}

function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (req.method === 'GET' && path.endsWith('/models')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'echo', object: 'model', created: 0, owned_by: 'task-router' }] }));
    return;
  }
  const chat = req.method === 'POST' && (path.endsWith('/chat/completions') || path.endsWith('/messages') || path.endsWith('/responses'));
  if (!chat) {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `the echo upstream serves chat requests only, not ${req.method} ${path}`, type: 'invalid_request_error', param: null, code: 'not_found' } }));
    return;
  }
  let body: Json;
  try {
    body = JSON.parse(raw) as Json;
  } catch {
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'body is not JSON', type: 'invalid_request_error', param: null, code: null } }));
    return;
  }
  const text = reply(path, body, req.headers);
  if (path.endsWith('/messages')) anthropic(res, body, text);
  else if (path.endsWith('/responses')) openaiResponses(res, body, text);
  else openaiChat(res, body, text);
}

export async function startEchoUpstream(host = '127.0.0.1', port = 0): Promise<EchoUpstream> {
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => handle(req, res, Buffer.concat(parts).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
