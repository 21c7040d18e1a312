/**
 * A client that reads slowly is not an idle upstream. While the client does not drain what it was
 * sent, the proxy's pipe pauses the upstream response and no byte can arrive; the idle timeout
 * (upstream.idleTimeoutMs) counts only the upstream's own silence. Timed: the client pauses five
 * idle timeouts long, so the old clock would cut it however busy the machine, and nothing here
 * depends on how fast anything else is.
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type Behaviour } from '../support/fake-upstream.js';
import { scrape, series, startConfigured } from '../support/running.js';
import { errorKinds } from './fault-matrix.js';

const IDLE_MS = 500;
const PAUSE_MS = IDLE_MS * 5;
const EVENT = `data: ${'x'.repeat(1018)}\n\n`;
/** 24 MiB: far more than loopback socket buffers hold, so a paused client holds the upstream back. */
const EVENTS = 24 * 1024;
const TOTAL = EVENTS * EVENT.length;

/** An upstream that streams TOTAL bytes as fast as its client (the gateway) takes them. */
const firehose: Behaviour = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let sent = 0;
  const pump = () => {
    while (sent < EVENTS) {
      sent += 1;
      if (!res.write(EVENT)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
};

/** Reads the response, pausing once for PAUSE_MS after its first MiB; resolves with how it ended and the bytes read. */
function slowRead(url: string): Promise<{ ending: string; bytes: number }> {
  const body = JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'write a long story' }] });
  return new Promise((resolve) => {
    const req = http.request(`${url}/v1/chat/completions`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let bytes = 0;
      let paused = false;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (!paused && bytes > 1024 * 1024) {
          paused = true;
          res.pause();
          setTimeout(() => res.resume(), PAUSE_MS);
        }
      });
      res.on('end', () => resolve({ ending: 'complete', bytes }));
      res.on('error', () => resolve({ ending: 'cut', bytes }));
      res.on('close', () => resolve({ ending: 'cut', bytes }));
    });
    req.on('error', () => resolve({ ending: 'cut', bytes: 0 }));
    req.end(body);
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-slow-reader-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('a slow reader (idleTimeoutMs 500, the client pausing 2.5 s)', () => {
  it('gets the whole response, and nothing is blamed on the upstream', async () => {
    const upstream = await startFakeUpstream(firehose);
    const gateway = await startConfigured(dir, { upstream: { url: upstream.url, timeoutMs: 30_000, idleTimeoutMs: IDLE_MS } });
    try {
      const outcome = await slowRead(gateway.url);
      expect(outcome).toEqual({ ending: 'complete', bytes: TOTAL });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(series(await scrape(gateway.url), 'task_router_upstream_errors_total')).toEqual(errorKinds({}));
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});
