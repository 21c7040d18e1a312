import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { expressServer } from '../../gateway/express-server.js';
import { listenOnLoopback } from '../support/listening.js';
import { closedAfterEach } from '../support/suite.js';

const closing = closedAfterEach();

async function listen(started: Server): Promise<string> {
  return closing(await listenOnLoopback(started)).url;
}

describe('expressServer', () => {
  it('makes requests and responses with the app prototypes before Express sees them, and serves as the app does', async () => {
    const app = express();
    app.use(express.json());
    app.post('/echo', (req, res) => {
      res.status(201).json({ path: req.path, body: req.body as unknown, host: req.get('host') !== undefined });
    });
    const started = expressServer(app);
    const born: boolean[] = [];
    // Runs before the app's own listener: what Node made, untouched by Express.
    started.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      born.push(Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response);
    });
    const url = await listen(started);
    for (const n of [1, 2]) {
      const response = await fetch(`${url}/echo?n=${n}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) });
      expect(response.status).toBe(201);
      expect(await response.json()).toEqual({ path: '/echo', body: { n }, host: true });
    }
    expect(born).toEqual([true, true]);
  });

  it('serves one app from two servers, each request born with the app prototypes', async () => {
    const app = express();
    app.use((req, res) => {
      res.json({ born: Object.getPrototypeOf(req) === app.request && Object.getPrototypeOf(res) === app.response, app: req.app === app });
    });
    const first = expressServer(app);
    const second = expressServer(app);
    const urls = [await listen(first), await listen(second)];
    for (const url of urls) expect(await (await fetch(url)).json()).toEqual({ born: true, app: true });
  });

  it('keeps the server options it is given', async () => {
    const app = express();
    app.use((_req, res) => {
      res.end('ok');
    });
    const url = await listen(expressServer(app, { maxHeaderSize: 1024 }));
    expect((await fetch(url)).status).toBe(200);
    expect((await fetch(url, { headers: { 'x-long': 'a'.repeat(4096) } })).status).toBe(431);
  });
});
