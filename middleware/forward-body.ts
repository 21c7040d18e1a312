import type http from 'node:http';
import type { Request } from 'express';
import { jsonBytes, type BodyBytes } from '../src/index.js';
import { forgetRawBody, rawBodyOf, withExactNumbers } from './json-body.js';
import { forgetSerializedBody, routingOf } from './task-router.js';

/** A body that cannot be sent upstream (see forwardedBody): the request fails alone, with this as its error. */
export class UnsendableBodyError extends Error {
  readonly code = 'TASK_ROUTER_UNSENDABLE_BODY';
  constructor(message: string) {
    super(message);
    this.name = 'UnsendableBodyError';
  }
}

/**
 * What goes upstream in place of a request stream a body parser consumed. `contentType` is the
 * Content-Type to send: a type, null for none (an empty body), undefined for the request's own.
 */
export interface ForwardedBody {
  readonly bytes: BodyBytes;
  readonly contentType: string | null | undefined;
}

const JSON_TYPE = 'application/json';
/** What a spent stream whose req.body was taken away (`req.body = undefined`) sends: nothing, said so by its length. */
const EMPTY_BODY: ForwardedBody = { bytes: { chunks: [], length: 0 }, contentType: null };

/**
 * The body to forward for a request whose stream a body parser consumed, or undefined when nothing
 * read it (the stream is piped as it comes). The client's bytes when jsonBody read them and nothing
 * changed req.body; taskRouter's JSON when req.body is what it wrote; else req.body serialised anew.
 * `req.body = undefined` after a parser means no body: an empty one with Content-Length 0 goes, since
 * the client's bytes are spent and an upstream told their length would wait for them forever.
 * Throws UnsendableBodyError for a req.body that cannot be serialised (see jsonOf).
 */
export function forwardedBody(req: Request): ForwardedBody | undefined {
  const body: unknown = req.body;
  if (body === undefined) return req.readableEnded ? EMPTY_BODY : undefined;
  const raw = rawBodyOf(req);
  // Another body parser (the host app's express.json()) read the stream and kept no bytes: piping the
  // spent stream would leave the upstream waiting for a body that never comes, so the parsed body is
  // serialized again. Not byte for byte, but the same JSON.
  if (raw === undefined && !req.readableEnded) return undefined;
  const serialized = routingOf(req)?.serialized ?? null;
  if (raw !== undefined && serialized === null) return { bytes: { chunks: [raw], length: raw.length }, contentType: undefined };
  // taskRouter serialized the body it wrote; a later middleware that replaced req.body gets it serialized here.
  return { bytes: withExactNumbers(req, serialized !== null && serialized.from === body ? serialized.bytes : jsonOf(body)), contentType: JSON_TYPE };
}

/**
 * `body` as JSON. A value JSON.stringify cannot write (nested deeper than it can recurse, though
 * JSON.parse read it; a BigInt; a cycle; a function) is an UnsendableBodyError naming the cause.
 */
function jsonOf(body: unknown): BodyBytes {
  let text: string | undefined;
  try {
    text = JSON.stringify(body);
  } catch (error) {
    throw new UnsendableBodyError(`req.body cannot be sent upstream: JSON.stringify failed (${(error as Error).message}). A body nested too deeply to serialise again goes byte for byte when jsonBody() parses it instead of express.json(); a req.body the app sets must be plain JSON (no BigInt, no cycles)`);
  }
  if (text === undefined) throw new UnsendableBodyError(`req.body cannot be sent upstream: it is ${typeof body}, which has no JSON form; set it to a JSON value, or to undefined to send no body`);
  return jsonBytes(text);
}

/**
 * Drops what a request holds of its body once the body is on its way upstream: req.body, the client's
 * bytes and ours. Nothing after the proxy reads them, and under load request objects outlive
 * young-generation collections, each one copying and promoting every byte the request still holds.
 */
export function releaseBody(req: Request): void {
  req.body = undefined;
  forgetRawBody(req);
  forgetSerializedBody(req);
}

/** Writes a body's pieces to `destination`, in order, and ends it. */
export function endWith(destination: NodeJS.WritableStream, bytes: BodyBytes): void {
  for (const chunk of bytes.chunks) destination.write(chunk);
  destination.end();
}

/**
 * A `proxyReq` handler for http-proxy-middleware behind `jsonBody`: the body was consumed by parsing, so
 * it is sent again in full, with its true length and no chunked transfer encoding (an upstream answers
 * a request carrying both with 400): the rewritten JSON if taskRouter changed it, else the original bytes.
 * A rewritten body is JSON whatever content type the client sent (curl -d says form-encoded, fetch says
 * text/plain), so it goes as application/json, not re-encoded by the client's label.
 * Caveat: http-proxy fires `proxyReq` when the request gets a socket; with an agent that queued it
 * (maxSockets reached) its headers are already sent by then (http-party/node-http-proxy#1478), so our
 * own proxy uses `forwardBodyOnCreation` instead.
 * It never throws: a body that cannot be sent (see forwardedBody), or headers already gone, destroys the
 * upstream request with the error, so the proxy answers this request with its error response (http-proxy-
 * middleware's default: a 500, or whatever the app's `on.error` sends) and the process goes on.
 */
export function restreamBody(proxyReq: http.ClientRequest, req: Request): void {
  try {
    const body = forwardedBody(req);
    if (body === undefined) return;
    proxyReq.removeHeader('transfer-encoding');
    proxyReq.removeHeader('content-encoding');
    if (body.contentType === null) proxyReq.removeHeader('content-type');
    else if (body.contentType !== undefined) proxyReq.setHeader('content-type', body.contentType);
    proxyReq.setHeader('content-length', body.bytes.length);
    for (const chunk of body.bytes.chunks) proxyReq.write(chunk);
  } catch (error) {
    // Nothing catches a throw inside http-proxy's 'proxyReq' event: it would end the process. As the
    // upstream request's error it fails this request alone, answered by the proxy's error handling.
    proxyReq.destroy(error instanceof Error ? error : new Error(String(error)));
  }
}
