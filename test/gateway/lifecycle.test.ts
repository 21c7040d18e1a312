/**
 * Probes and shutdown: /livez and /readyz are answered by the gateway itself (a Kubernetes probe must
 * never reach the LLM provider), /healthz and /admin/state show the last reload, and SIGTERM drains:
 * readiness fails, no new connections, streams in flight finish within server.shutdownGraceMs. (That
 * what is left after the grace is cut at it, counted and logged as a shutdown cut, not as an upstream
 * fault, is timed in lifecycle.slow.test.ts.)
 */
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { writeTestConfig } from '../support/config-file.js';
import { scratchAndUpstream } from '../support/suite.js';
import { startGatewayForTest, type FakeUpstream } from '../support/fake-upstream.js';
import { capturedLog } from '../support/running.js';
import { serveCli, slowStream, STREAM_BODY, startStream } from './lifecycle-support.js';

const TOKEN = 'lifecycle-admin-token';
let dir: string;
let upstream: FakeUpstream;
let gateway: RunningGateway | null = null;
let child: ChildProcess | null = null;

scratchAndUpstream('lifecycle', (made) => ({ dir, upstream } = made));
afterEach(async () => {
  await gateway?.close();
  gateway = null;
  if (child && child.exitCode === null) child.kill('SIGKILL');
  child = null;
});

let configs = 0;
const config = (changes: Record<string, Record<string, unknown>> = {}) => {
  configs += 1;
  return writeTestConfig(dir, `lifecycle-${configs}.yaml`, { upstream: { url: upstream.url }, logging: { decisions: false, memory: false }, ...changes });
};

describe('probes', () => {
  it('/livez and /readyz are answered by the gateway, never upstream', async () => {
    gateway = await startGateway({ configFile: await config() });
    for (const path of ['/livez', '/readyz']) {
      const response = await fetch(`${gateway.url}${path}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: path === '/livez' ? 'ok' : 'ready' });
    }
    expect(upstream.requests).toHaveLength(0);
  });

  it('the bare app (createGatewayApp) answers the probes too', async () => {
    const bare = await startGatewayForTest({ upstreamUrl: upstream.url });
    try {
      expect((await fetch(`${bare.url}/livez`)).status).toBe(200);
      expect((await fetch(`${bare.url}/readyz`)).status).toBe(200);
      expect(upstream.requests).toHaveLength(0);
    } finally {
      await bare.close();
    }
  });

  it('/healthz and /admin/state show the last reload: ok, when, errors', async () => {
    const file = await config();
    gateway = await startGateway({ configFile: file, env: { ADMIN_TOKEN: TOKEN } });
    const started = (await (await fetch(`${gateway.url}/healthz`)).json()) as { lastReload: { ok: boolean; at: string; trigger: string; errors: string[] }; draining: boolean };
    expect(started.draining).toBe(false);
    expect(started.lastReload).toMatchObject({ ok: true, trigger: 'start', errors: [] });
    expect(Date.parse(started.lastReload.at)).not.toBeNaN();

    await writeFile(file, (await readFile(file, 'utf8')).replace(/strategy: replace/, 'strategy: sideways'));
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${gateway.url}/admin/reload`, { method: 'POST', headers: auth })).status).toBe(400);
    const health = (await (await fetch(`${gateway.url}/healthz`)).json()) as typeof started;
    expect(health.lastReload).toMatchObject({ ok: false, trigger: 'admin' });
    expect(health.lastReload.errors.join('\n')).toMatch(/routing\.strategy/);
    expect(Date.parse(health.lastReload.at)).toBeGreaterThanOrEqual(Date.parse(started.lastReload.at));
    const state = (await (await fetch(`${gateway.url}/admin/state`, { headers: auth })).json()) as { lastReload: unknown };
    expect(state.lastReload).toEqual(health.lastReload);

    await writeFile(file, (await readFile(file, 'utf8')).replace(/strategy: sideways/, 'strategy: prepend'));
    expect((await fetch(`${gateway.url}/admin/reload`, { method: 'POST', headers: auth })).status).toBe(200);
    expect(((await (await fetch(`${gateway.url}/healthz`)).json()) as typeof started).lastReload).toMatchObject({ ok: true, trigger: 'admin', errors: [] });
  });
});

describe('draining (in process)', () => {
  it('fails readiness, lets a stream finish within the grace, and refuses new connections', async () => {
    const { log, lines } = capturedLog();
    gateway = await startGateway({ configFile: await config({ server: { shutdownGraceMs: 5000 } }), log });
    const url = new URL(gateway.url);
    upstream.respond(slowStream(6, 100));
    // One connection: a streamed request, then, once draining, a readiness check behind it on the same
    // connection (a new connection is no longer accepted).
    const socket = net.connect(Number(url.port), url.hostname);
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(STREAM_BODY)}\r\n\r\n${STREAM_BODY}`);
    for (let waited = 0; !received.includes('\r\n\r\n') && waited < 5000; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(received).toMatch(/^HTTP\/1\.1 200/);
    const drained = gateway.drain();
    socket.write(`GET /readyz HTTP/1.1\r\nhost: ${url.host}\r\n\r\n`);
    await expect(fetch(`${gateway.url}/livez`)).rejects.toThrow();
    await ended;
    await drained;
    // The stream ran to its end, and the readiness answer after it says draining and closes the connection.
    const [stream, readiness] = received.split(/(?=HTTP\/1\.1 503)/);
    expect(stream).toContain('[DONE]');
    expect(readiness).toMatch(/^HTTP\/1\.1 503/);
    expect(readiness).toMatch(/\r\nconnection: close\r\n/i);
    expect(readiness).toContain('{"status":"draining"}');
    expect(lines.join('')).not.toMatch(/shutdown cut/);
    gateway = null;
  });
});

describe('SIGTERM on `task-router serve`', () => {
  const serve = async (graceMs: number) =>
    serveCli(await config({ server: { shutdownGraceMs: graceMs } }), join(dir, 'logs'), (spawned) => {
      child = spawned;
    });

  it('a slow stream in flight finishes, then the process exits 0', async () => {
    const running = await serve(10_000);
    upstream.respond(slowStream(8, 150));
    const stream = await startStream(running.url);
    child?.kill('SIGTERM');
    const ended = await stream.done;
    expect(ended.complete).toBe(true);
    expect(ended.body).toContain('[DONE]');
    expect(await running.exited).toBe(0);
    expect(running.output()).toMatch(/draining for shutdown/);
    expect(running.output()).not.toMatch(/shutdown cut/);
    expect(running.output()).toMatch(/task-router stopped/);
  });

  it('a SIGHUP during the drain is ignored: the stream still finishes and the process exits 0', async () => {
    const running = await serve(10_000);
    upstream.respond(slowStream(8, 150));
    const stream = await startStream(running.url);
    child?.kill('SIGTERM');
    while (!/draining for shutdown/.test(running.output())) await new Promise((resolve) => setTimeout(resolve, 20));
    child?.kill('SIGHUP');
    const ended = await stream.done;
    expect(ended.complete).toBe(true);
    expect(await running.exited).toBe(0);
    expect(running.output()).toMatch(/task-router stopped/);
  });
});
