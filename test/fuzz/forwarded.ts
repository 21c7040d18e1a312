/**
 * The property of the HTTP fuzz suites: every request is either forwarded (the fake upstream saw it,
 * the client got its answer) or refused with a clear 4xx in the API's own error shape.
 */
import { expect } from 'vitest';
import type { ApiName, FakeUpstream } from '../support/fake-upstream.js';
import { CHAT_PATH } from '../gateway/clients.js';

/** The error body each API's SDK understands. */
export function isApiError(api: ApiName, body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const error = (body as { error?: Record<string, unknown> }).error;
  if (typeof error !== 'object' || error === null || typeof error.message !== 'string' || error.message === '') return false;
  if (api === 'anthropic') return (body as { type?: unknown }).type === 'error' && typeof error.type === 'string';
  return typeof error.type === 'string' && 'param' in error && typeof error.code === 'string';
}

/** Sends a body to the gateway at `gatewayUrl` (in front of `upstream`) and checks the property; returns the status. */
export async function forwardedOrRefused(gatewayUrl: string, upstream: FakeUpstream, api: ApiName, body: string | Uint8Array, contentType = 'application/json'): Promise<number> {
  const before = upstream.requests.length;
  const response = await fetch(`${gatewayUrl}${CHAT_PATH[api]}`, { method: 'POST', headers: { 'content-type': contentType }, body: body as BodyInit });
  const text = await response.text();
  const seen = upstream.requests.length - before;
  if (response.status === 200) {
    expect(seen, 'a 200 must come from the upstream').toBe(1);
  } else {
    // A charset other than UTF-8 is refused whatever the body: 415 Unsupported Media Type.
    const refusals = /charset=(?!utf-)/i.test(contentType) ? [415] : [400, 413];
    expect(refusals, `status ${response.status}: ${text.slice(0, 300)}`).toContain(response.status);
    expect(seen, 'a refused request must not reach the upstream').toBe(0);
    expect(isApiError(api, JSON.parse(text)), text.slice(0, 300)).toBe(true);
  }
  return response.status;
}
