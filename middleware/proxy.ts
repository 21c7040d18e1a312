import http from 'node:http';
import https from 'node:https';
import type { Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { formatForPath } from '../src/index.js';
import { sendError } from './errors.js';
import { rawBodyOf } from './json-body.js';
import { decisionHeaders, routingOf } from './task-router.js';

/** The body to forward for a request `jsonBody` consumed: the rewritten JSON if taskRouter changed it, else the original bytes. */
function forwardedBody(req: Request): { readonly bytes: Buffer; readonly rewritten: boolean } | undefined {
  const raw = rawBodyOf(req);
  if (raw === undefined) return undefined;
  const routing = routingOf(req);
  if (!routing?.rewritten) return { bytes: raw, rewritten: false };
  // taskRouter serialized the body it wrote; a later middleware that replaced req.body gets it serialized here.
  const serialized = routing.serialized;
  return { bytes: serialized && serialized.from === req.body ? serialized.bytes : Buffer.from(JSON.stringify(req.body)), rewritten: true };
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
 */
export function restreamBody(proxyReq: http.ClientRequest, req: Request): void {
  const body = forwardedBody(req);
  if (body === undefined) return;
  proxyReq.removeHeader('transfer-encoding');
  proxyReq.removeHeader('content-encoding');
  if (body.rewritten) proxyReq.setHeader('content-type', 'application/json');
  proxyReq.setHeader('content-length', body.bytes.length);
  proxyReq.write(body.bytes);
}

/**
 * Gets hold of the upstream request the moment http-proxy creates it, and sends the forwarded body then.
 * http-proxy copies req.headers into the upstream request and sends the body with `req.pipe(proxyReq)`
 * right after creating it; its `proxyReq` event comes later, on the socket, which for a request the
 * agent queued (maxSockets reached) is after the request has ended and its headers have gone: setting
 * the length or writing the body there throws ERR_HTTP_HEADERS_SENT and takes the process down
 * (http-party/node-http-proxy#1478). So the headers are set on req before the proxy runs, and this
 * request's `pipe` (its stream, consumed by parsing, has nothing left to give) writes the body.
 */
function forwardBodyOnCreation(req: Request, created: (proxyReq: http.ClientRequest) => void): void {
  const body = forwardedBody(req);
  if (body !== undefined) {
    delete req.headers['transfer-encoding'];
    delete req.headers['content-encoding'];
    if (body.rewritten) req.headers['content-type'] = 'application/json';
    req.headers['content-length'] = String(body.bytes.length);
  }
  const pipe = req.pipe.bind(req);
  const ownPipe = <T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T => {
    if (destination instanceof http.ClientRequest) created(destination);
    if (body === undefined) return pipe(destination, options);
    destination.end(body.bytes);
    return destination;
  };
  req.pipe = ownPipe;
}

export interface UpstreamOptions {
  readonly url: string;
  /** Time allowed for response headers before the client gets a 504. */
  readonly timeoutMs: number;
  readonly maxSockets: number;
  /** Longest silence allowed inside a response body before both sides are closed; default 300000. */
  readonly idleTimeoutMs?: number;
}

/**
 * Why an upstream call failed: before any header (unreachable, timeout: the client gets 502/504), or
 * after them (idle_timeout, aborted: the client's response is cut, as a direct connection's would be).
 */
export type UpstreamErrorKind = 'upstream_unreachable' | 'upstream_timeout' | 'upstream_idle_timeout' | 'upstream_aborted';

export interface UpstreamHooks {
  response?(status: number, req: Request): void;
  error?(kind: UpstreamErrorKind, error: Error, req: Request): void;
}

export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

export interface UpstreamProxy {
  readonly handler: RequestHandler;
  /** Closes the pooled keep-alive sockets. */
  close(): void;
}

/**
 * http-proxy-middleware in front of the upstream, with a keep-alive agent (a socket per request would
 * exhaust ports under load), our body re-streamed with its true length, responses piped unbuffered,
 * and the upstream request aborted when the client goes away.
 */
export function createUpstreamProxy(options: UpstreamOptions, hooks: UpstreamHooks = {}): UpstreamProxy {
  const target = new URL(options.url);
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: Math.min(options.maxSockets, 64) };
  const agent = target.protocol === 'https:' ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  const timedOut = new WeakSet<http.IncomingMessage>();
  // Requests whose response failed after its headers: counted once, by the hook that saw it first.
  const cutAfterHeaders = new WeakSet<http.IncomingMessage>();
  const clientGone = new WeakSet<http.IncomingMessage>();
  const answered = new WeakSet<http.IncomingMessage>();
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;

  /**
   * From its creation (so time queued for a socket counts too), an upstream request has timeoutMs to
   * answer with headers, and is aborted when the client goes away.
   */
  const watch = (proxyReq: http.ClientRequest, req: Request, res: Response) => {
    const timer = setTimeout(() => {
      timedOut.add(req);
      proxyReq.destroy(new Error(`no response headers from the upstream within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    proxyReq.once('response', () => clearTimeout(timer));
    proxyReq.once('close', () => clearTimeout(timer));
    const gone = () => {
      clientGone.add(req);
      proxyReq.destroy();
    };
    if (res.destroyed) return gone();
    res.once('close', () => {
      if (!res.writableFinished) gone();
    });
  };

  const proxy = createProxyMiddleware<Request, Response>({
    target: options.url,
    changeOrigin: true,
    agent,
    xfwd: false,
    // The default plugins log every request and answer errors in their own shape; ours are below.
    ejectPlugins: true,
    plugins: [(proxyServer) => {
      proxyServer.on('proxyRes', (proxyRes, req, res) => {
        answered.add(req);
        // An upstream that sends headers and then nothing (a stream never closed) would hold both sockets
        // for ever: the body may pause for at most idleTimeoutMs between bytes.
        const idle = setTimeout(() => {
          cutAfterHeaders.add(req);
          hooks.error?.('upstream_idle_timeout', new Error(`no byte of the response body from the upstream for ${idleTimeoutMs} ms`), req);
          proxyRes.destroy();
          res.destroy();
        }, idleTimeoutMs);
        proxyRes.on('data', () => idle.refresh());
        // An upstream that stops mid-response (closed or reset) ends the client's response too, as a
        // direct connection would: a half-sent stream must not hang open.
        proxyRes.once('close', () => {
          clearTimeout(idle);
          if (proxyRes.complete) return;
          if (!cutAfterHeaders.has(req) && !clientGone.has(req)) {
            cutAfterHeaders.add(req);
            hooks.error?.('upstream_aborted', new Error('the upstream closed the response before its end'), req);
          }
          res.destroy();
        });
        // Streams get their headers (and our decision headers) at once, not with the first event.
        if (String(proxyRes.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          process.nextTick(() => {
            if (!res.headersSent && !res.destroyed) res.flushHeaders();
          });
        }
        const decision = routingOf(req)?.decision;
        if (decision) {
          for (const name of Object.keys(proxyRes.headers)) if (name.startsWith('x-task-router-')) delete proxyRes.headers[name];
          Object.assign(proxyRes.headers, decisionHeaders(decision));
        }
        hooks.response?.(proxyRes.statusCode ?? 0, req);
      });
      proxyServer.on('error', (error, req, res) => {
        const request = req as Request;
        // After the headers the client's response can only be cut; the failure is counted once, by
        // whichever of this event and the response's close comes first (a reset raises both).
        if (answered.has(request) || clientGone.has(request)) {
          if (answered.has(request) && !cutAfterHeaders.has(request) && !clientGone.has(request)) {
            cutAfterHeaders.add(request);
            hooks.error?.('upstream_aborted', error, request);
          }
          if ('destroy' in res) res.destroy();
          return;
        }
        const kind = timedOut.has(request) ? 'upstream_timeout' : 'upstream_unreachable';
        hooks.error?.(kind, error, request);
        if (!('status' in res)) return;
        const format = formatForPath(request.path ?? request.url)?.name ?? null;
        const message = kind === 'upstream_timeout'
          ? `the upstream did not answer within ${options.timeoutMs} ms`
          : `the upstream could not be reached: ${(error as NodeJS.ErrnoException).code ?? error.message}`;
        sendError(res as Response, format, kind, message);
      });
    }],
  });
  const handler: RequestHandler = (req, res, next) => {
    forwardBodyOnCreation(req, (proxyReq) => watch(proxyReq, req, res));
    return proxy(req, res, next);
  };
  return { handler, close: () => agent.destroy() };
}
