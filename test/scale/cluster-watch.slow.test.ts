/**
 * The cluster primary watches the configuration files for its workers: a reload that turns reload.watch
 * on (SIGHUP, or an admin reload on a worker) starts the watch, as it does in a single process.
 * Slow: it waits, with deadlines, for reloads of real processes.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTestConfig } from '../support/config-file.js';
import { apiReply, startFakeUpstream, type FakeUpstream } from '../support/fake-upstream.js';
import { killAll, killWorkers, request, serve, until, type ServeProcess } from '../support/serve.js';

const ADMIN = 'cluster-watch-admin-token';
const auth = { authorization: `Bearer ${ADMIN}` };

let dir: string;
let upstream: FakeUpstream;
let file: string;
let primary: ServeProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-cluster-watch-'));
  upstream = await startFakeUpstream(apiReply('ok'));
  file = await writeTestConfig(dir, 'cluster.yaml', {
    upstream: { url: upstream.url },
    logging: { decisions: false, memory: false },
    reload: { watch: false, debounceMs: 50 },
  });
  primary = await serve(file, { ADMIN_TOKEN: ADMIN, LOG_DIR: join(dir, 'logs') }, ['--workers', '2']);
}, 120_000);

afterAll(async () => {
  const lines = primary?.lines() ?? [];
  await killAll();
  killWorkers(lines);
  await upstream?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const reloads = (trigger: string) => primary.lines().filter((line) => line.msg === 'config reloaded' && line.trigger === trigger).length;

/** The strategies the workers serve, over fresh connections (each may land on either worker). */
async function strategies(): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let index = 0; index < 12; index += 1) seen.add((JSON.parse((await request(primary.url, '/admin/state', { headers: auth })).body) as { strategy: string }).strategy);
  return seen;
}

describe('a cluster started with reload.watch off', () => {
  it('watches the files once a SIGHUP reload turned it on', async () => {
    const edit = async (from: RegExp, to: string) => writeFile(file, (await readFile(file, 'utf8')).replace(from, to));
    await edit(/watch: false/, 'watch: true');
    primary.signal('SIGHUP');
    await until('both workers reloaded on SIGHUP', async () => reloads('SIGHUP'), (count) => count >= 2);
    // Give the primary a moment to read the file it told the workers to reload.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await edit(/strategy: replace/, 'strategy: prepend');
    await until('both workers reloaded the edit the watch saw', async () => reloads('watch'), (count) => count >= 2);
    expect(await strategies()).toEqual(new Set(['prepend']));
  });
});
