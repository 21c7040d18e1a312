/**
 * Loaded with `node --import` into the Portkey gateway process of bench/gateway.ts (setup e). It touches
 * nothing on the per-request path of non-streamed requests:
 *
 * - Binding: Portkey's start-server listens on all interfaces and takes only --port=N. Here a listen
 *   with no host gets 127.0.0.1, and the first server to listen prints "listening http://127.0.0.1:PORT"
 *   on stderr, so it can run on port 0.
 * - Streams: with @hono/node-server newer than 1.14.2 (this install has a newer one), Portkey answers
 *   every streamed chat completion with a 500 ("TypeError: immutable": it appends x-portkey-* headers to
 *   the upstream fetch Response, whose headers are immutable; Portkey-AI/gateway issues 1389 and 1550).
 *   A streamed upstream response (content-type text/event-stream) is therefore handed to Portkey as a
 *   new Response with a copy of its headers. Non-streamed responses are returned as fetch made them.
 */
import net from 'node:net';

const LOOPBACK = '127.0.0.1';
const originalListen = net.Server.prototype.listen;
let reported = false;

net.Server.prototype.listen = function listen(this: net.Server, ...args: unknown[]): net.Server {
  const [first, second] = args;
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    if (second === undefined) args[1] = LOOPBACK;
    else if (typeof second === 'function') args.splice(1, 0, LOOPBACK);
  } else if (typeof first === 'object' && first !== null && !('fd' in first) && !('path' in first) && !('handle' in first) && !('_handle' in first)) {
    const options = first as net.ListenOptions;
    if (options.host === undefined) args[0] = { ...options, host: LOOPBACK };
  }
  this.once('listening', () => {
    if (reported) return;
    const address = this.address();
    if (address === null || typeof address === 'string') return;
    reported = true;
    process.stderr.write(`listening http://${address.address}:${address.port}\n`);
  });
  return (originalListen as (...a: unknown[]) => net.Server).apply(this, args);
} as typeof net.Server.prototype.listen;

const originalFetch = globalThis.fetch;
globalThis.fetch = async function fetchWithMutableStreamHeaders(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<Response> {
  const response = await originalFetch(input, init);
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return response;
  // `Response` is looked up now, after @hono/node-server replaced the global with its own class.
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: new Headers(response.headers) });
};
