/**
 * The gateway's process keeps the builtin prototypes in V8's fast mode. node-redis subclasses String,
 * which leaves String.prototype in dictionary mode and every string method call on a slow path (the
 * classifier at about 60% of its speed): node-redis is loaded only when a Redis link is opened, and the
 * prototypes are mended then (restoreFastPrototypes, which an app embedding the middleware calls
 * itself). Checked in a child process with V8's natives syntax, which asks V8 directly.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../support/built.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-prototypes-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const PROTOTYPES = ['String', 'Array', 'Object', 'Number', 'Boolean', 'Function', 'Symbol', 'Map', 'Set', 'Promise', 'RegExp', 'Error', 'Date', 'Uint8Array'];

/** Runs `body` (an ES module, with `slow()` listing the builtin prototypes in dictionary mode) and returns what it prints. */
async function probe(name: string, body: string): Promise<unknown> {
  const file = join(dir, `${name}.mjs`);
  const slow = `const slow = () => ${JSON.stringify(PROTOTYPES)}.filter((name) => !%HasFastProperties(globalThis[name].prototype));`;
  await writeFile(file, `${slow}\n${body}\n`);
  const run = spawnSync(process.execPath, ['--allow-natives-syntax', file], { encoding: 'utf8', timeout: 60_000 });
  expect(run.stderr).toBe('');
  expect(run.status).toBe(0);
  return JSON.parse(run.stdout);
}

describe('builtin prototypes in the gateway process', () => {
  it('stay fast with the gateway loaded, and after a Redis link is opened', async () => {
    const gateway = pathToFileURL(ensureBuilt('gateway/index.js')).href;
    const redisLink = pathToFileURL(ensureBuilt('gateway/redis-link.js')).href;
    const seen = await probe('gateway', `
      const before = slow();
      await import(${JSON.stringify(gateway)});
      const loaded = slow();
      const { RedisLink } = await import(${JSON.stringify(redisLink)});
      const log = { info() {}, warn() {}, error() {}, debug() {} };
      // Nothing listens on port 1: the link keeps trying in the background until it is closed.
      const link = await RedisLink.open({ settings: { url: 'redis://127.0.0.1:1', keyPrefix: 't:', timeoutMs: 50, connectTimeoutMs: 100, maxStateBytes: 4096 }, log });
      const linked = slow();
      await link.close();
      console.log(JSON.stringify({ before, loaded, linked }));
    `);
    expect(seen).toEqual({ before: [], loaded: [], linked: [] });
  });

  it('node-redis alone leaves String.prototype slow, and restoreFastPrototypes mends it in an app of its own', async () => {
    // When `loaded` is empty, node-redis no longer does it, and restoreFastPrototypes can go.
    const redis = pathToFileURL(createRequire(import.meta.url).resolve('redis')).href;
    const middleware = pathToFileURL(ensureBuilt('middleware/index.js')).href;
    const seen = await probe('redis', `
      await import(${JSON.stringify(redis)});
      const loaded = slow();
      const { restoreFastPrototypes } = await import(${JSON.stringify(middleware)});
      restoreFastPrototypes();
      console.log(JSON.stringify({ loaded, mended: slow() }));
    `);
    expect(seen).toEqual({ loaded: ['String'], mended: [] });
  });
});

describe('requests and responses of expressServer', () => {
  it('are in fast mode when the app sees them', async () => {
    const expressServer = pathToFileURL(ensureBuilt('gateway/express-server.js')).href;
    const express = pathToFileURL(createRequire(import.meta.url).resolve('express')).href;
    const seen = await probe('objects', `
      const { default: express } = await import(${JSON.stringify(express)});
      const { expressServer } = await import(${JSON.stringify(expressServer)});
      const app = express();
      const fast = [];
      app.use((req, res) => {
        fast.push(%HasFastProperties(req) && %HasFastProperties(res));
        res.end('ok');
      });
      const server = expressServer(app);
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      for (let i = 0; i < 3; i += 1) await (await fetch('http://127.0.0.1:' + server.address().port + '/')).text();
      server.closeAllConnections();
      server.close();
      console.log(JSON.stringify(fast));
    `);
    expect(seen).toEqual([true, true, true]);
  });
});
