import http from 'node:http';
import type { Request, RequestHandler } from 'express';
import { jsonBytes, type BodyBytes } from '../src/index.js';
import { jsonKind } from './errors.js';
import { dropHopByHop, forgetRawBody, isJsonMedia, rawBodyOf, readByJsonBody, withExactNumbers } from './json-body.js';
import { requestSlot } from './request-slot.js';
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
 * changed req.body; taskRouter's JSON when req.body is what it wrote; else req.body serialised anew,
 * as JSON, or in its own type when another parser than jsonBody made it (see inItsOwnType).
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
  if (serialized !== null && serialized.from === body) return { bytes: withExactNumbers(req, serialized.bytes), contentType: JSON_TYPE };
  if (!readByJsonBody(req)) {
    const own = inItsOwnType(req, body);
    if (own !== null) return own;
  }
  return { bytes: withExactNumbers(req, jsonOf(body)), contentType: JSON_TYPE };
}

const FORM_MEDIA = /^\s*application\/x-www-form-urlencoded\s*(?:;|$)/i;
const CHARSET = /;\s*charset\s*=\s*(?:"[^"]*"|[^;\s]*)/i;

/**
 * A body another parser than jsonBody made, sent again as what it was rather than as JSON: a Buffer
 * (express.raw()) as its bytes and a string (express.text()) as its UTF-8 bytes, both under the
 * request's own Content-Type (its charset, if it names one, becoming utf-8); a form
 * (express.urlencoded()) encoded again as a form. Null for a body that is JSON (express.json()).
 */
function inItsOwnType(req: Request, body: unknown): ForwardedBody | null {
  const type = req.headers['content-type'] ?? '';
  if (body instanceof Uint8Array) return { bytes: { chunks: [body], length: body.byteLength }, contentType: undefined };
  if (typeof body === 'string' && !isJsonMedia(type)) {
    return { bytes: jsonBytes(body), contentType: CHARSET.test(type) ? type.replace(CHARSET, '; charset=utf-8') : undefined };
  }
  if (FORM_MEDIA.test(type) && typeof body === 'object' && body !== null && !Array.isArray(body)) {
    return { bytes: formOf(body as Record<string, unknown>), contentType: undefined };
  }
  return null;
}

/**
 * A parsed form encoded again as application/x-www-form-urlencoded. Only a flat form can be: fields
 * of strings, numbers or booleans, or lists of them (a repeated field). A nested one (qs's `a[b]=1`,
 * express.urlencoded({ extended: true })) has no one encoding every server reads alike, so it is an
 * UnsendableBodyError rather than a guess.
 */
function formOf(form: Record<string, unknown>): BodyBytes {
  const fields = new URLSearchParams();
  for (const [name, value] of Object.entries(form)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean') {
        throw new UnsendableBodyError(`req.body cannot be sent upstream as application/x-www-form-urlencoded: its field "${name.slice(0, 40)}" holds ${jsonKind(item)}, and only flat forms (strings, or lists of strings) are encoded again. Parse forms with express.urlencoded({ extended: false }), or set req.body to a flat object`);
      }
      fields.append(name, String(item));
    }
  }
  return jsonBytes(fields.toString());
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
function endWith(destination: NodeJS.WritableStream, bytes: BodyBytes): void {
  for (const chunk of bytes.chunks) destination.write(chunk);
  destination.end();
}

/** Requests whose body forwardBodyOnCreation sends: restreamBody leaves them alone. */
const forwardedOnCreation = requestSlot<true>('task-router.forwardedOnCreation');

/**
 * Gets hold of the upstream request the moment http-proxy creates it, and sends the forwarded body then.
 * http-proxy copies req.headers into the upstream request and sends the body with `req.pipe(proxyReq)`
 * right after creating it; its `proxyReq` event comes later, on the socket, which for a request the
 * agent queued (maxSockets reached) is after the request has ended and its headers have gone: setting
 * the length or writing the body there throws ERR_HTTP_HEADERS_SENT (http-party/node-http-proxy#1478).
 * So the headers are set on req before the proxy runs, and this request's `pipe` (its stream, consumed
 * by parsing, has nothing left to give) writes the body. `created` sees the upstream request as it is piped to.
 * Throws UnsendableBodyError for a req.body that cannot be serialised (see forwardedBody).
 */
export function forwardBodyOnCreation(req: Request, created?: (proxyReq: http.ClientRequest) => void): void {
  // A body of unknown length (the client sent it chunked) goes on chunked: Transfer-Encoding is dropped
  // with the other hop-by-hop headers and set anew, since a GET or DELETE body sent with neither a length
  // nor chunking would be read by the upstream as the start of a second request.
  const chunked = req.headers['transfer-encoding'] !== undefined && req.headers['content-length'] === undefined;
  dropHopByHop(req.headers);
  const body = forwardedBody(req);
  forwardedOnCreation.set(req, true);
  if (body !== undefined) {
    delete req.headers['transfer-encoding'];
    delete req.headers['content-encoding'];
    if (body.contentType === null) delete req.headers['content-type'];
    else if (body.contentType !== undefined) req.headers['content-type'] = body.contentType;
    req.headers['content-length'] = String(body.bytes.length);
  } else if (chunked) {
    req.headers['transfer-encoding'] = 'chunked';
  }
  const pipe = req.pipe.bind(req);
  const ownPipe = <T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T => {
    const upstream = destination instanceof http.ClientRequest ? destination : null;
    if (upstream) created?.(upstream);
    if (body === undefined) {
      if (upstream) guardWrites(upstream);
      return pipe(destination, options);
    }
    // Used once: the request lets go of this pipe and of its body as the body goes out.
    req.pipe = pipe;
    releaseBody(req);
    try {
      endWith(destination, body.bytes);
    } catch (error) {
      if (!upstream) throw error;
      failWith(upstream, error);
    }
    return destination;
  };
  req.pipe = ownPipe;
}

/** Ends the upstream request with `error` as its 'error' event, for the proxy to answer. */
function failWith(proxyReq: http.ClientRequest, error: unknown): void {
  proxyReq.destroy(error instanceof Error ? error : new Error(String(error)));
}

/**
 * Makes a synchronous throw of `write` or `end` on the upstream request destroy it with that error
 * instead. A streamed body is written inside the client request's stream events, where nothing catches
 * a throw and the process would end; as an 'error' event the proxy answers this one request.
 * Only streamed bodies get these wrappers: closures set on every upstream request kept about 8 KB of
 * each request alive past a young-generation collection (node --trace-gc-nvp), so a body we hold is
 * ended inside a try instead.
 */
function guardWrites(proxyReq: http.ClientRequest): void {
  const { write, end } = proxyReq;
  proxyReq.write = ((...args: unknown[]): boolean => {
    try {
      return Reflect.apply(write, proxyReq, args) as boolean;
    } catch (error) {
      failWith(proxyReq, error);
      return false;
    }
  }) as http.ClientRequest['write'];
  proxyReq.end = ((...args: unknown[]): http.ClientRequest => {
    try {
      return Reflect.apply(end, proxyReq, args) as http.ClientRequest;
    } catch (error) {
      failWith(proxyReq, error);
      return proxyReq;
    }
  }) as http.ClientRequest['end'];
}

/**
 * Sends the body a parser consumed on to the upstream through http-proxy-middleware (or any proxy built
 * on http-proxy), placed right before the proxy: `app.use(forwardBody(), createProxyMiddleware(…))`.
 * The body is what forwardedBody says (the client's bytes when nothing changed it, taskRouter's JSON,
 * or req.body serialised anew), with its true length and no chunked encoding; a request no parser read
 * is piped as it comes. Unlike a `proxyReq` handler, it works whatever the proxy's agent does with the
 * request, queued for a socket included. A req.body that cannot be sent is an UnsendableBodyError passed
 * to next(), for the app's error handler to answer, and the request never goes upstream.
 */
export function forwardBody(): RequestHandler {
  return (req, _res, next) => {
    try {
      forwardBodyOnCreation(req);
    } catch (error) {
      return next(error);
    }
    next();
  };
}

/**
 * A `proxyReq` handler for http-proxy-middleware behind `jsonBody`; forwardBody() replaces it, and
 * should be used instead. The body was consumed by parsing, so it is sent again in full, with its true
 * length and no chunked transfer encoding (an upstream answers a request carrying both with 400): the
 * rewritten JSON if taskRouter changed it, else the original bytes. A rewritten body is JSON whatever
 * content type the client sent (curl -d says form-encoded, fetch says text/plain), so it goes as
 * application/json, not re-encoded by the client's label.
 * It cannot work for a request the proxy's agent queued for a socket (maxSockets reached): http-proxy
 * fires `proxyReq` only when the socket comes, after the request and its headers have gone
 * (http-party/node-http-proxy#1478). Such a request fails with an UnsendableBodyError saying so.
 * It does nothing for a request forwardBody() handles, so the two can be wired together while migrating.
 * It never throws: a body that cannot be sent (see forwardedBody), or headers already gone, destroys the
 * upstream request with the error, so the proxy answers this request with its error response (http-proxy-
 * middleware's default: a 500, or whatever the app's `on.error` sends) and the process goes on.
 */
export function restreamBody(proxyReq: http.ClientRequest, req: Request): void {
  if (forwardedOnCreation.get(req) === true) return;
  try {
    const body = forwardedBody(req);
    if (body === undefined) return;
    if (proxyReq.headersSent) {
      throw new UnsendableBodyError('the request body could not be sent upstream: the proxy\'s agent queued the request for a socket (maxSockets reached), and http-proxy sent it, without the parsed body, before its proxyReq event ran. Put forwardBody() before createProxyMiddleware instead of on: { proxyReq: restreamBody }');
    }
    proxyReq.removeHeader('transfer-encoding');
    proxyReq.removeHeader('content-encoding');
    if (body.contentType === null) proxyReq.removeHeader('content-type');
    else if (body.contentType !== undefined) proxyReq.setHeader('content-type', body.contentType);
    proxyReq.setHeader('content-length', body.bytes.length);
    for (const chunk of body.bytes.chunks) proxyReq.write(chunk);
  } catch (error) {
    // Nothing catches a throw inside http-proxy's 'proxyReq' event: it would end the process. As the
    // upstream request's error it fails this request alone, answered by the proxy's error handling.
    failWith(proxyReq, error);
  }
}
