import type { Response } from 'express';
import type { FormatName } from '../src/index.js';

export type ErrorKind = 'invalid_request' | 'too_large' | 'upstream_unreachable' | 'upstream_timeout' | 'internal';

const STATUS: Readonly<Record<ErrorKind, number>> = {
  invalid_request: 400,
  too_large: 413,
  upstream_unreachable: 502,
  upstream_timeout: 504,
  internal: 500,
};

const OPENAI_TYPE: Readonly<Record<ErrorKind, string>> = {
  invalid_request: 'invalid_request_error',
  too_large: 'invalid_request_error',
  upstream_unreachable: 'api_error',
  upstream_timeout: 'api_error',
  internal: 'api_error',
};

const ANTHROPIC_TYPE: Readonly<Record<ErrorKind, string>> = {
  invalid_request: 'invalid_request_error',
  too_large: 'request_too_large',
  upstream_unreachable: 'api_error',
  upstream_timeout: 'timeout_error',
  internal: 'api_error',
};

/** An error body in the API's own shape, so the client's SDK reports it as it would the provider's. */
export function errorBody(format: FormatName | null, kind: ErrorKind, message: string): object {
  if (format === 'anthropic') return { type: 'error', error: { type: ANTHROPIC_TYPE[kind], message } };
  return { error: { message, type: OPENAI_TYPE[kind], param: null, code: kind } };
}

export function sendError(res: Response, format: FormatName | null, kind: ErrorKind, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(STATUS[kind]).json(errorBody(format, kind, message));
}
