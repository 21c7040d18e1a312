/** The gateway's error bodies, in the shape each API's SDK expects (SPEC §4). */
import { expect } from 'vitest';
import type { ApiName } from '../support/fake-upstream.js';

/** What an error of one kind says in each API's shape. */
export interface ErrorKind {
  readonly openaiType: string;
  readonly anthropicType: string;
  readonly code: string;
}

/** The error body shape each API's SDK expects, for a given gateway error kind. */
export function expectErrorShape(api: ApiName | null, body: unknown, kind: ErrorKind): void {
  if (api === 'anthropic') {
    expect(body).toEqual({ type: 'error', error: { type: kind.anthropicType, message: expect.any(String) } });
  } else {
    expect(body).toEqual({ error: { message: expect.any(String), type: kind.openaiType, param: null, code: kind.code } });
  }
  expect((body as { error: { message: string } }).error.message.length).toBeGreaterThan(0);
}

export const INVALID: ErrorKind = { openaiType: 'invalid_request_error', anthropicType: 'invalid_request_error', code: 'invalid_request' };
export const TOO_LARGE: ErrorKind = { openaiType: 'invalid_request_error', anthropicType: 'request_too_large', code: 'too_large' };
export const UNREACHABLE: ErrorKind = { openaiType: 'api_error', anthropicType: 'api_error', code: 'upstream_unreachable' };
export const TIMEOUT: ErrorKind = { openaiType: 'api_error', anthropicType: 'timeout_error', code: 'upstream_timeout' };
