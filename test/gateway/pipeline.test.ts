import express, { type ErrorRequestHandler } from 'express';
import { describe, expect, it } from 'vitest';
import { pipeline } from '../../gateway/pipeline.js';
import { listenOnLoopback } from '../support/listening.js';
import { closedAfterEach } from '../support/suite.js';

const closing = closedAfterEach();

async function serve(steps: Parameters<typeof pipeline>[0]): Promise<string> {
  const app = express();
  app.use(pipeline(steps));
  app.use((_req, res) => {
    res.status(404).json({ reached: 'after the pipeline' });
  });
  const handler: ErrorRequestHandler = (error: unknown, _req, res, _next) => {
    res.status(500).json({ error: (error as Error).message });
  };
  app.use(handler);
  return closing(await listenOnLoopback(app)).url;
}

describe('pipeline', () => {
  it('runs the steps in order, then leaves through next', async () => {
    const url = await serve([
      (req, _res, next) => {
        req.headers['x-seen'] = 'a';
        next();
      },
      (req, _res, next) => {
        req.headers['x-seen'] += 'b';
        next();
      },
      (req, res, next) => {
        if (req.path === '/answer') res.json({ seen: req.headers['x-seen'] });
        else next();
      },
    ]);
    expect(await (await fetch(`${url}/answer`)).json()).toEqual({ seen: 'ab' });
    const passed = await fetch(`${url}/other`);
    expect(passed.status).toBe(404);
    expect(await passed.json()).toEqual({ reached: 'after the pipeline' });
  });

  it('sends a thrown error and an error passed to next to the app, skipping the steps after it', async () => {
    let reached = 0;
    const url = await serve([
      (req, _res, next) => {
        if (req.path === '/throw') throw new Error('thrown');
        if (req.path === '/pass') return next(new Error('passed'));
        next();
      },
      (_req, res) => {
        reached += 1;
        res.json({});
      },
    ]);
    for (const [path, message] of [['/throw', 'thrown'], ['/pass', 'passed']] as const) {
      const response = await fetch(`${url}${path}`);
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ error: message });
    }
    expect(reached).toBe(0);
  });

  it('counts a step\'s next once: a second call runs nothing again', async () => {
    let runs = 0;
    const url = await serve([
      (_req, _res, next) => {
        next();
        next();
        next(new Error('too late'));
      },
      (_req, res) => {
        runs += 1;
        res.json({ runs });
      },
    ]);
    const response = await fetch(`${url}/`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ runs: 1 });
    expect(runs).toBe(1);
  });
});
