import http from 'node:http';
import https from 'node:https';
import type { Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { formatForPath } from '../src/index.js';
import { sendError } from './errors.js';
import { rawBodyOf } from './json-body.js';
import { decisionHeaders, routingOf } from './task-router.js';

/**
 * A `proxyReq` handler for http-proxy-middleware behind `jsonBody`: the body was consumed by parsing, so
 * it is sent again in full, with its true length and no chunked transfer encoding (an upstream answers
 * a request carrying both with 400): the rewritten JSON if taskRouter changed it, else the original bytes.
 * A rewritten body is JSON whatever content type the client sent (curl -d says form-encoded, fetch says
 * text/plain), so it goes as application/json, not re-encoded by the client's label.
 */
export function restreamBody(proxyReq: http.ClientRequest, req: Request): void {
  const raw = rawBodyOf(req);
  if (raw === undefined) return;
  proxyReq.removeHeader('transfer-encoding');
  proxyReq.removeHeader('content-encoding');
  const body = routingOf(req)?.rewritten ? Buffer.from(JSON.stringify(req.body)) : raw;
  if (body !== raw) proxyReq.setHeader('content-type', 'application/json');
  proxyReq.setHeader('content-length', body.length);
  proxyReq.write(body);
}

export interface UpstreamOptions {
  readonly url: string;
  /** Time allowed for response headers before the client gets a 504. */
  readonly timeoutMs: number;
  readonly maxSockets: number;
}

export interface UpstreamHooks {
  response?(status: number, req: Request): void;
  error?(kind: 'upstream_unreachable' | 'upstream_timeout', error: Error, req: Request): void;
}

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

  const handler = createProxyMiddleware<Request, Response>({
    target: options.url,
    changeOrigin: true,
    agent,
    xfwd: false,
    // The default plugins log every request and answer errors in their own shape; ours are below.
    ejectPlugins: true,
    plugins: [(proxyServer) => {
      proxyServer.on('proxyReq', (proxyReq, req, res) => {
        restreamBody(proxyReq, req);
        const timer = setTimeout(() => {
          timedOut.add(req);
          proxyReq.destroy(new Error(`no response headers from the upstream within ${options.timeoutMs} ms`));
        }, options.timeoutMs);
        proxyReq.once('response', () => clearTimeout(timer));
        proxyReq.once('close', () => clearTimeout(timer));
        res.once('close', () => {
          if (!res.writableFinished) proxyReq.destroy();
        });
      });
      proxyServer.on('proxyRes', (proxyRes, req, res) => {
        // An upstream that stops mid-response (closed or reset) ends the client's response too, as a
        // direct connection would: a half-sent stream must not hang open.
        proxyRes.once('close', () => {
          if (!proxyRes.complete) res.destroy();
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
  return { handler, close: () => agent.destroy() };
}
