/**
 * Flipping hard routing at run time under load, through the admin API, the watched config file and
 * SIGHUP: no request fails and every request started after the flip follows the new mode. Timed: the
 * load must get enough requests through around each flip. (The other flag tests are in flags.test.ts.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import { ROOT } from '../support/config-file.js';
import { chat, hardRoutingOf, TOKEN, until, writeFlagsConfig, type FlagsConfigChanges } from './flags-support.js';

let dir: string;
let gateway: RunningGateway | null = null;
let child: ChildProcess | null = null;

const writeConfig = (name: string, changes?: FlagsConfigChanges) => writeFlagsConfig(dir, name, changes);

async function setHardInFile(file: string, hard: boolean): Promise<void> {
  const text = await readFile(file, 'utf8');
  await writeFile(file, text.replace(/hard: (true|false)/, `hard: ${hard}`));
}


/**
 * Runs `workers` request loops against the gateway while `flip` runs; every request records when it
 * started, so requests that started after the flip completed can be checked against the new mode.
 */
async function underLoad(url: string, flip: () => Promise<void>, expectAfter: 'hard' | 'soft'): Promise<void> {
  const results: { started: number; status: number; routing: string | null }[] = [];
  let stop = false;
  const worker = async () => {
    for (let sent = 0; !stop && sent < 400; sent += 1) {
      const started = performance.now();
      const { status, routing } = await chat(url);
      results.push({ started, status, routing });
    }
  };
  const workers = Array.from({ length: 6 }, worker);
  await new Promise((r) => setTimeout(r, 100));
  await flip();
  const flipped = performance.now();
  await new Promise((r) => setTimeout(r, 150));
  stop = true;
  await Promise.all(workers);
  expect(results.length).toBeGreaterThan(20);
  expect(results.filter((r) => r.status !== 200)).toEqual([]);
  const after = results.filter((r) => r.started > flipped);
  expect(after.length).toBeGreaterThan(0);
  expect(after.filter((r) => r.routing !== expectAfter)).toEqual([]);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-flags-'));
  return () => rm(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await gateway?.close();
  gateway = null;
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child?.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  child = null;
});

describe('toggling at run time under load', () => {
  it('the admin API flips both ways; no request fails and every later request follows the new mode', async () => {
    gateway = await startGateway({ configFile: await writeConfig('admin.yaml', { watch: false }), env: { ADMIN_TOKEN: TOKEN } });
    const url = gateway.url;
    const flag = (hardRouting: boolean) => async () => {
      const res = await fetch(`${url}/admin/flags`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ hardRouting }) });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ hardRouting });
    };
    await underLoad(url, flag(false), 'soft');
    await underLoad(url, flag(true), 'hard');
  });

  it('editing the watched config file flips both ways', async () => {
    const file = await writeConfig('watched.yaml');
    gateway = await startGateway({ configFile: file });
    const url = gateway.url;
    const flip = (hard: boolean) => async () => {
      await setHardInFile(file, hard);
      await until(async () => (await hardRoutingOf(url)) === hard, `the file watch to apply hard: ${hard}`);
    };
    await underLoad(url, flip(false), 'soft');
    await underLoad(url, flip(true), 'hard');
  });

  it('the watch follows the prompt folder: one the file repoints to, and one replaced whole', async () => {
    const copy = async (name: string, heading: string) => {
      const folder = join(dir, name);
      await cp(join(ROOT, 'prompts'), folder, { recursive: true });
      const action = join(folder, 'action.md');
      await writeFile(action, (await readFile(action, 'utf8')).replace(/^# .*$/m, `# ${heading}`));
      return folder;
    };
    const first = await copy('prompts-first', 'Orchestrator first');
    const file = await writeConfig('watched-prompts.yaml');
    await writeFile(file, (await readFile(file, 'utf8')).replace(/^prompts: .*$/m, `prompts: ${first}`));
    gateway = await startGateway({ configFile: file });
    const url = gateway.url;
    const served = async (heading: string) => (await chat(url)).body.includes(`# ${heading}`);
    expect(await served('Orchestrator first')).toBe(true);
    // Repointed: edits in the new folder are picked up.
    const second = await copy('prompts-second', 'Orchestrator second');
    await writeFile(file, (await readFile(file, 'utf8')).replace(/^prompts: .*$/m, `prompts: ${second}`));
    await until(() => served('Orchestrator second'), 'the repointed folder served');
    const action = join(second, 'action.md');
    await writeFile(action, (await readFile(action, 'utf8')).replace('# Orchestrator second', '# Orchestrator second, edited'));
    await until(() => served('Orchestrator second, edited'), 'an edit in the repointed folder applied');
    // Replaced whole, as a deploy does: then an edit in the new folder.
    const fresh = await copy('prompts-fresh', 'Orchestrator fresh');
    await rename(second, join(dir, 'prompts-old'));
    await rename(fresh, second);
    await until(() => served('Orchestrator fresh'), 'the replaced folder served');
    await writeFile(action, (await readFile(action, 'utf8')).replace('# Orchestrator fresh', '# Orchestrator fresh, edited'));
    await until(() => served('Orchestrator fresh, edited'), 'an edit in the replaced folder applied');
  });

  it('SIGHUP reloads the file in the running CLI gateway, both ways', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const file = await writeConfig('sighup.yaml', { watch: false, port });
    child = spawn(process.execPath, [join(ROOT, 'dist/cli/main.js'), 'serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    const url = `http://127.0.0.1:${port}`;
    await until(async () => fetch(`${url}/healthz`).then(() => true, () => false), 'the CLI gateway to listen', 15_000);
    const flip = (hard: boolean) => async () => {
      await setHardInFile(file, hard);
      child?.kill('SIGHUP');
      await until(async () => (await hardRoutingOf(url)) === hard, `SIGHUP to apply hard: ${hard}`);
    };
    await underLoad(url, flip(false), 'soft');
    await underLoad(url, flip(true), 'hard');
  });
});
