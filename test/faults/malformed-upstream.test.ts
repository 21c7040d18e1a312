/**
 * Upstreams that break HTTP in ways Node's client lets through: a status line or an answer the proxy
 * cannot relay as it came, bytes after a complete response. The upstream is a raw TCP server (a real
 * HTTP server cannot be made to send these), the gateway is startGateway with its real /metrics, and
 * the client is a raw HTTP/1.1 socket. Header and idle timeouts are a minute, so any answer that
 * arrives did not wait for one of them: a hang shows as no answer within the test's bound.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../../gateway/app.js';
import { listenOnLoopback } from '../support/listening.js';
import { postHead, rawRequest, type RawResponse } from '../support/raw-http.js';
import { scrape, series, startConfigured } from '../support/running.js';
import { errorKinds } from './fault-matrix.js';

/** Long enough that no answer in these tests can come from a timeout. */
const LONG_MS = 60_000;
/** How long the client waits for an answer: well under LONG_MS, well over any prompt answer on a busy machine. */
const CLIENT_WAIT_MS = 15_000;

interface RawUpstream {
  readonly url: string;
  /** Connections the gateway opened to it so far. */
  connections(): number;
  close(): Promise<void>;
}

/** A TCP server that reads each request (head and Content-Length body) and writes `reply` as it is, on a connection kept open. */
async function rawUpstream(reply: string | Buffer): Promise<RawUpstream> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(buffered.subarray(0, end).toString('latin1'))?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.subarray(end + 4 + length);
        socket.write(reply);
      }
    });
  });
  const listening = await listenOnLoopback(server);
  return {
    url: listening.url,
    connections: () => connections,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return listening.close();
    },
  };
}

const CHAT = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'what is a mutex?' }] });

let dir: string;
let gateway: RunningGateway | null = null;
let upstream: RawUpstream | null = null;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-malformed-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(async () => {
  await gateway?.close();
  await upstream?.close();
  gateway = null;
  upstream = null;
});

async function behind(reply: string | Buffer): Promise<{ gateway: RunningGateway; upstream: RawUpstream }> {
  upstream = await rawUpstream(reply);
  gateway = await startConfigured(dir, { upstream: { url: upstream.url, timeoutMs: LONG_MS, idleTimeoutMs: LONG_MS } });
  return { gateway, upstream };
}

async function chat(url: string): Promise<RawResponse | null> {
  return rawRequest(url, postHead('/v1/chat/completions', CHAT, ['Connection: close']), CHAT, CLIENT_WAIT_MS);
}

async function upstreamErrors(url: string): Promise<Record<string, number>> {
  // Counters move as the request closes on the gateway's side, a moment after the client has its answer.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return series(await scrape(url), 'task_router_upstream_errors_total');
}

describe('an upstream answer the client cannot be given as it came', () => {
  it('101 Switching Protocols to a plain request: a 502 at once, counted as upstream_unreachable', async () => {
    const { gateway } = await behind('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    const response = await chat(gateway.url);
    expect(response?.status).toBe(502);
    const body = JSON.parse(response?.body ?? '{}') as { error: { code: string; message: string } };
    expect(body.error.code).toBe('upstream_unreachable');
    expect(body.error.message).toMatch(/101/);
    expect(await upstreamErrors(gateway.url)).toEqual(errorKinds({ upstream_unreachable: 1 }));
  });

  it.each([
    ['status 099', 'HTTP/1.1 099 Odd\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', /099/],
    ['status 000', 'HTTP/1.1 000 Zero\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', /000/],
    ['a control character in the reason phrase', 'HTTP/1.1 503 Busy\x01\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}', /control character/],
  ])('%s: a 502 at once, counted as upstream_unreachable', async (_name, reply, reason) => {
    const { gateway } = await behind(reply);
    const response = await chat(gateway.url);
    expect(response?.status).toBe(502);
    const body = JSON.parse(response?.body ?? '{}') as { error: { code: string; message: string } };
    expect(body.error.code).toBe('upstream_unreachable');
    expect(body.error.message).toMatch(reason);
    expect(await upstreamErrors(gateway.url)).toEqual(errorKinds({ upstream_unreachable: 1 }));
    // The gateway serves on: the next request is answered the same way.
    expect((await chat(gateway.url))?.status).toBe(502);
  });
});

/** Sends `request` as written on a connection of its own and resolves with everything that comes back until it closes (or CLIENT_WAIT_MS). */
function exchange(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname, () => socket.write(request));
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const timer = setTimeout(done, CLIENT_WAIT_MS);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.once('close', done);
  });
}

describe('bytes after a complete upstream response', () => {
  const chatRequest = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${CHAT.length}\r\nConnection: close\r\n\r\n${CHAT}`;
  it.each([
    ['a body on a HEAD answer', 'HEAD /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"data":[]}', 'HTTP/1.1 200 OK', ''],
    ['a body on a 204', 'DELETE /v1/files/file-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n{}', 'HTTP/1.1 204 No Content', ''],
    ['junk after Content-Length on a chat answer', chatRequest, 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"data":[]}XYZ', 'HTTP/1.1 200 OK', '{"data":[]}'],
  ])('%s: the response reaches the client whole, the stray bytes do not, the socket is not reused', async (_name, request, reply, statusLine, body) => {
    const { gateway, upstream } = await behind(reply);
    for (const attempt of [1, 2]) {
      const answer = await exchange(gateway.url, request);
      expect(answer.split('\r\n')[0], `attempt ${attempt}`).toBe(statusLine);
      expect(answer.slice(answer.indexOf('\r\n\r\n') + 4), `attempt ${attempt}`).toBe(body);
      // The upstream socket that carried the stray bytes is closed: each request had a connection of its own.
      expect(upstream.connections()).toBe(attempt);
    }
    expect(await upstreamErrors(gateway.url)).toEqual(errorKinds({}));
  });
});
