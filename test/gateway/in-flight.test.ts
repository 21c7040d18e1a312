import express, { type Response } from 'express';
import { describe, expect, it } from 'vitest';
import { expressServer } from '../../gateway/express-server.js';
import { InFlight } from '../../gateway/in-flight.js';
import { listenOnLoopback } from '../support/listening.js';
import { closedAfterEach } from '../support/suite.js';

const closing = closedAfterEach();

const until = async (check: () => boolean) => {
  for (let tries = 0; !check(); tries += 1) {
    if (tries > 500) throw new Error('condition not reached in 5 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('InFlight', () => {
  it('holds the responses open now, with their requests, and lets go of each as it closes', async () => {
    const inFlight = new InFlight();
    const held = new Map<string, Response>();
    const app = express();
    app.get('/:name', (req, res) => {
      held.set(req.params.name as string, res);
    });
    const server = expressServer(app);
    server.on('request', (_req, res: Response) => inFlight.add(res));
    const { url } = closing(await listenOnLoopback(server));

    const answers = ['a', 'b', 'c'].map((name) => fetch(`${url}/${name}`).then((response) => response.text()));
    await until(() => held.size === 3);
    expect(inFlight.size).toBe(3);
    expect(inFlight.responses().map((res) => res.req.path).sort()).toEqual(['/a', '/b', '/c']);

    held.get('b')?.end('done');
    await until(() => inFlight.size === 2);
    expect(inFlight.responses().map((res) => res.req.path).sort()).toEqual(['/a', '/c']);

    // A response opened after one closed is held too; a client going away closes it.
    const controller = new AbortController();
    const aborted = fetch(`${url}/d`, { signal: controller.signal }).catch((error: unknown) => error);
    await until(() => held.size === 4);
    expect(inFlight.size).toBe(3);
    controller.abort();
    await aborted;
    await until(() => inFlight.size === 2);

    held.get('a')?.end('done');
    held.get('c')?.end('done');
    expect(await Promise.all(answers)).toEqual(['done', 'done', 'done']);
    await until(() => inFlight.size === 0);
    expect(inFlight.responses()).toEqual([]);
  });
});
