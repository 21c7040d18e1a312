/**
 * The official SDK clients pointed at a gateway under test, and small wrappers that send one user
 * message in each API and return the reply text and the response headers.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ApiName, RecordedRequest } from '../support/fake-upstream.js';

export const OPENAI_KEY = 'sk-test-openai-key-123';
export const ANTHROPIC_KEY = 'sk-ant-test-key-456';

export function openaiClient(gatewayUrl: string, headers: Record<string, string> = {}): OpenAI {
  return new OpenAI({ apiKey: OPENAI_KEY, baseURL: `${gatewayUrl}/v1`, maxRetries: 0, timeout: 10_000, defaultHeaders: headers });
}

export function anthropicClient(gatewayUrl: string, headers: Record<string, string> = {}): Anthropic {
  return new Anthropic({ apiKey: ANTHROPIC_KEY, authToken: null, baseURL: gatewayUrl, maxRetries: 0, timeout: 10_000, defaultHeaders: headers });
}

export interface SdkResult {
  readonly text: string;
  readonly headers: Headers;
  readonly status: number;
}

/** Sends `content` as the latest user turn with the official SDK of `api`, streamed or not. */
export async function askWithSdk(
  api: ApiName,
  gatewayUrl: string,
  content: string,
  stream: boolean,
  headers: Record<string, string> = {},
): Promise<SdkResult> {
  if (api === 'openai-chat') {
    const client = openaiClient(gatewayUrl, headers);
    if (stream) {
      const { data, response } = await client.chat.completions
        .create({ model: 'gpt-test', messages: [{ role: 'user', content }], stream: true })
        .withResponse();
      let text = '';
      for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
      return { text, headers: response.headers, status: response.status };
    }
    const { data, response } = await client.chat.completions
      .create({ model: 'gpt-test', messages: [{ role: 'user', content }] })
      .withResponse();
    return { text: data.choices[0]?.message.content ?? '', headers: response.headers, status: response.status };
  }
  if (api === 'openai-responses') {
    const client = openaiClient(gatewayUrl, headers);
    if (stream) {
      const { data, response } = await client.responses.create({ model: 'gpt-test', input: content, stream: true }).withResponse();
      let text = '';
      for await (const event of data) if (event.type === 'response.output_text.delta') text += event.delta;
      return { text, headers: response.headers, status: response.status };
    }
    const { data, response } = await client.responses.create({ model: 'gpt-test', input: content }).withResponse();
    return { text: data.output_text, headers: response.headers, status: response.status };
  }
  const client = anthropicClient(gatewayUrl, headers);
  if (stream) {
    const { data, response } = await client.messages
      .create({ model: 'claude-test', max_tokens: 64, messages: [{ role: 'user', content }], stream: true })
      .withResponse();
    let text = '';
    for await (const event of data) {
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    return { text, headers: response.headers, status: response.status };
  }
  const { data, response } = await client.messages
    .create({ model: 'claude-test', max_tokens: 64, messages: [{ role: 'user', content }] })
    .withResponse();
  const first = data.content[0];
  return { text: first?.type === 'text' ? first.text : '', headers: response.headers, status: response.status };
}

/** The path each API posts chat requests to. */
export const CHAT_PATH: Readonly<Record<ApiName, string>> = {
  'openai-chat': '/v1/chat/completions',
  anthropic: '/v1/messages',
  'openai-responses': '/v1/responses',
};

/** A minimal request body of each API carrying one user turn. */
export function bodyWithUserText(api: ApiName, content: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  if (api === 'anthropic') return { model: 'claude-test', max_tokens: 64, messages: [{ role: 'user', content }], ...extra };
  if (api === 'openai-responses') return { model: 'gpt-test', input: content, ...extra };
  return { model: 'gpt-test', messages: [{ role: 'user', content }], ...extra };
}

/** POSTs a JSON body to the gateway with plain fetch. */
export function postJson(gatewayUrl: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${gatewayUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The system prompt of a request body as the upstream received it, by API. */
export function systemOf(api: ApiName, body: RecordedRequest['json']): unknown {
  if (api === 'anthropic') return body.system;
  if (api === 'openai-responses') return body.instructions;
  return body.messages?.[0]?.content;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const APIS: readonly ApiName[] = ['openai-chat', 'openai-responses', 'anthropic'];
