import type { ErrorRequestHandler, Request, Response } from 'express';
import { formatForPath, type FormatName } from '../src/index.js';
import { safely } from './observers.js';
import { fullPath } from './request-path.js';

export type ErrorKind =
  | 'invalid_request'
  | 'forbidden'
  | 'not_found'
  | 'too_large'
  | 'unsupported_media_type'
  | 'upstream_unreachable'
  | 'upstream_timeout'
  | 'internal';

const STATUS: Readonly<Record<ErrorKind, number>> = {
  invalid_request: 400,
  forbidden: 403,
  not_found: 404,
  too_large: 413,
  unsupported_media_type: 415,
  upstream_unreachable: 502,
  upstream_timeout: 504,
  internal: 500,
};

const OPENAI_TYPE: Readonly<Record<ErrorKind, string>> = {
  invalid_request: 'invalid_request_error',
  forbidden: 'invalid_request_error',
  not_found: 'invalid_request_error',
  too_large: 'invalid_request_error',
  unsupported_media_type: 'invalid_request_error',
  upstream_unreachable: 'api_error',
  upstream_timeout: 'api_error',
  internal: 'api_error',
};

const ANTHROPIC_TYPE: Readonly<Record<ErrorKind, string>> = {
  invalid_request: 'invalid_request_error',
  forbidden: 'permission_error',
  not_found: 'not_found_error',
  too_large: 'request_too_large',
  unsupported_media_type: 'invalid_request_error',
  upstream_unreachable: 'api_error',
  upstream_timeout: 'timeout_error',
  internal: 'api_error',
};

/**
 * Anthropic's endpoints under /messages besides its chat route: count_tokens and the batches API (a
 * batch, its results, its cancel). No OpenAI path has them under /messages.
 */
const ANTHROPIC_MESSAGES_ENDPOINT = /\/messages\/(?:count_tokens|batches)(?:\/|$)/i;

/**
 * The API whose error shape a request's errors take, by the API its path belongs to: a POST to a chat
 * route gets that route's; Anthropic's other endpoints (count_tokens, batches) get Anthropic's, whatever
 * the method; on a path both APIs serve (/v1/models, /v1/files) a request naming `anthropic-version`,
 * which Anthropic's SDKs send on every call, gets Anthropic's; everything else (null) OpenAI's. Chat
 * routes count for POSTs only: OpenAI's GET /v1/chat/completions/{id}/messages ends as Anthropic's
 * route does, and is OpenAI's.
 */
export function errorFormatFor(req: Pick<Request, 'method' | 'headers'>, path: string): FormatName | null {
  if (req.method === 'POST') {
    const format = formatForPath(path);
    if (format) return format.name;
  }
  const anthropic = ANTHROPIC_MESSAGES_ENDPOINT.test(path.split('?')[0] ?? '') || req.headers['anthropic-version'] !== undefined;
  return anthropic ? 'anthropic' : null;
}

/** An error body in the API's own shape, so the client's SDK reports it as it would the provider's. */
export function errorBody(format: FormatName | null, kind: ErrorKind, message: string): object {
  if (format === 'anthropic') return { type: 'error', error: { type: ANTHROPIC_TYPE[kind], message } };
  return { error: { message, type: OPENAI_TYPE[kind], param: null, code: kind } };
}

export const statusOf = (kind: ErrorKind): number => STATUS[kind];

export function sendError(res: Response, format: FormatName | null, kind: ErrorKind, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(STATUS[kind]).json(errorBody(format, kind, message));
}

/** The gateway's own endpoints (/router, /admin, /metrics): {"error": {"message", "type", "details"?}}. */
export function sendRouterError(res: Response, status: number, message: string, details?: readonly string[]): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const type = status === 401 ? 'authentication_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
  res.status(status).json({ error: { message, type, ...(details ? { details } : {}) } });
}

/** What body-parser, raw-body, http-errors and zlib put on the errors they raise. */
interface RequestError extends Error {
  readonly type?: string;
  readonly status?: number;
  readonly statusCode?: number;
  readonly expose?: boolean;
  readonly code?: string;
  readonly limit?: number;
  readonly charset?: string;
  readonly encoding?: string;
  readonly errno?: number;
}

export interface DescribedError {
  readonly kind: ErrorKind;
  readonly message: string;
  /** The client went away mid-body: nobody is left to answer. */
  readonly clientGone?: boolean;
}

const isRequestError = (error: unknown): error is RequestError => error instanceof Error;

/** Codes of zlib's inflate, gunzip and brotli failures (Z_DATA_ERROR, Z_BUF_ERROR, ERR__ERROR_FORMAT_…, ERR_BROTLI_…). */
const DECOMPRESSION = /^(?:Z_|ERR__|ERR_BROTLI|ERR_ZLIB|ERR_ZSTD)/;

/** "a number", "an array", "null": what a JSON value is, for messages about the wrong one. */
export function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * Maps anything a request can fail with before a handler answers it (body-parser's typed errors, zlib
 * errors from a Content-Encoding that lies, http-errors, our own throws) to a kind and a message for the
 * client; `limitHint` names the setting behind a body limit. Unknown errors are internal: their message
 * stays in our logs, never in a response.
 */
export function describeError(error: unknown, req: Request, limitHint = ''): DescribedError {
  if (!isRequestError(error)) return { kind: 'internal', message: 'internal error in the gateway' };
  const encoding = String(req.headers['content-encoding'] ?? 'identity').toLowerCase();
  switch (error.type) {
    case 'entity.too.large':
      return { kind: 'too_large', message: `request body is larger than this endpoint's limit of ${error.limit} bytes${limitHint ? ` (${limitHint})` : ''}` };
    case 'entity.parse.failed':
      return { kind: 'invalid_request', message: `request body is not valid JSON: ${error.message}` };
    case 'entity.verify.failed':
      return { kind: 'invalid_request', message: 'request body was refused' };
    case 'encoding.unsupported':
      return { kind: 'unsupported_media_type', message: `content-encoding "${error.encoding ?? encoding}" is not supported: send the body uncompressed or as gzip, deflate or br` };
    case 'charset.unsupported':
      return { kind: 'unsupported_media_type', message: `charset "${String(error.charset ?? '').toUpperCase()}" is not supported: send JSON as UTF-8` };
    case 'request.size.invalid':
      return { kind: 'invalid_request', message: 'request body length does not match its Content-Length header' };
    case 'parameters.too.many':
      return { kind: 'too_large', message: 'request body has too many parameters' };
    case 'request.aborted':
      return { kind: 'invalid_request', message: 'the client closed the request before its body was complete', clientGone: true };
    default:
      break;
  }
  if (typeof error.code === 'string' && DECOMPRESSION.test(error.code)) {
    return { kind: 'invalid_request', message: `request body is not valid ${encoding} (its Content-Encoding): ${error.message}` };
  }
  // Express decodes each named part of a path (a session id, say) and fails on a stray %.
  if (error instanceof URIError) {
    return { kind: 'invalid_request', message: 'the path holds a broken percent-encoding (a % not followed by two hex digits): write a % in a path as %25' };
  }
  const status = error.status ?? error.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const kind: ErrorKind = status === 413 ? 'too_large' : status === 415 ? 'unsupported_media_type' : status === 403 ? 'forbidden' : 'invalid_request';
    return { kind, message: error.expose ? error.message : 'the request could not be read' };
  }
  return { kind: 'internal', message: 'internal error in the gateway' };
}

/**
 * An error handler for the gateway's own JSON endpoints (/router, /admin): bad JSON, bad encodings and
 * bodies over the limit answered in their shape; `limitHint` says what the limit is for.
 */
export function ownEndpointErrors(limitHint: string): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    const described = describeError(error, req, limitHint);
    if (described.clientGone) return res.destroy();
    if (described.kind === 'internal') return next(error);
    sendRouterError(res, STATUS[described.kind], described.message);
  };
}

export interface FinalErrorOptions {
  /** Observes errors answered as internal (for the operational log); may be async, its failure is swallowed. */
  readonly internal?: (error: unknown, req: Request) => void;
  /** Which response shape a path gets: the chat API's (by path) unless this says the gateway's own. */
  readonly ownPath?: (path: string) => boolean;
}

/** Paths the gateway itself serves, whose errors come in its own shape. */
export const OWN_PATH = /^\/(?:admin|router|metrics|healthz)(?:\/|$)/i;

/**
 * The last error handler of an app: whatever reached it is answered in JSON, in the chat API's shape on a
 * chat path and in the gateway's own shape elsewhere, with the right status and never a stack trace.
 */
export function finalErrorHandler(options: FinalErrorOptions = {}): ErrorRequestHandler {
  const ownPath = options.ownPath ?? ((path: string) => OWN_PATH.test(path));
  return (error: unknown, req, res, _next) => {
    const described = describeError(error, req);
    if (described.clientGone || res.headersSent) {
      res.destroy();
      return;
    }
    if (described.kind === 'internal') safely(() => options.internal?.(error, req));
    if (ownPath(req.path)) return sendRouterError(res, STATUS[described.kind], described.message);
    sendError(res, errorFormatFor(req, fullPath(req)), described.kind, described.message);
  };
}
