/**
 * What a reload reads, and what the watch sees: an edit made while a reload runs is served once it is
 * done; reload.watch turned off or on by a reload is followed; a prompt folder deleted and made again,
 * a config file that is a symbolic link, and a Kubernetes ConfigMap's `..data` swap are all seen.
 * Timed: a reload must be under way when the edit lands, and the watch is given seconds to act.
 */
import { writeFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../gateway/app.js';
import type { ReloadResult } from '../../gateway/runtime.js';
import { ROOT } from '../support/config-file.js';
import { chat, hardRoutingOf, until, writeFlagsConfig } from './flags-support.js';

let dir: string;
let gateway: RunningGateway | null = null;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-reload-'));
});

afterEach(async () => {
  await gateway?.close();
  gateway = null;
  await rm(dir, { recursive: true, force: true });
});

/** Rewrites `file` once with every [pattern, replacement] applied; each pattern must be there. */
async function setInFile(file: string, ...changes: [RegExp, string][]): Promise<void> {
  let text = await readFile(file, 'utf8');
  for (const [pattern, replacement] of changes) {
    expect(text).toMatch(pattern);
    text = text.replace(pattern, replacement);
  }
  await writeFile(file, text);
}


const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('reloads', () => {
  it('an edit made while a reload runs is served once it is done', async () => {
    const file = await writeFlagsConfig(dir, 'during.yaml', { watch: false });
    const text = await readFile(file, 'utf8');
    gateway = await startGateway({ configFile: file });
    const { runtime } = gateway;
    const running = runtime.reload('api');
    // 100 ms on, the running reload read the file long ago and is building the classifier (most of a
    // second); the timer fires between two of its steps. The edit and the request to reload come together.
    const asked = await new Promise<ReloadResult>((resolve) => {
      setTimeout(() => {
        writeFileSync(file, text.replace('hard: true', 'hard: false'));
        resolve(runtime.reload('api'));
      }, 100);
    });
    expect(await running).toMatchObject({ ok: true, hardRouting: true });
    expect(asked).toMatchObject({ ok: true, hardRouting: false });
    expect(await hardRoutingOf(gateway.url)).toBe(false);
  });

  it('reload.watch turned off by a reload stops the watch, and turned on by one starts it', async () => {
    const file = await writeFlagsConfig(dir, 'watch.yaml');
    gateway = await startGateway({ configFile: file });
    const url = gateway.url;
    await setInFile(file, [/watch: true/, 'watch: false'], [/hard: true/, 'hard: false']);
    await until(async () => (await hardRoutingOf(url)) === false, 'the watched edit that turns the watch off');
    await setInFile(file, [/hard: false/, 'hard: true']);
    await pause(1000);
    expect(await hardRoutingOf(url)).toBe(false);
    await setInFile(file, [/watch: false/, 'watch: true']);
    expect(await gateway.runtime.reload('api')).toMatchObject({ ok: true, hardRouting: true });
    await setInFile(file, [/hard: true/, 'hard: false']);
    await until(async () => (await hardRoutingOf(url)) === false, 'the watch, on again, to apply an edit');
  });
});

describe('the watch', () => {
  const promptsCopy = async (folder: string, heading: string) => {
    await cp(join(ROOT, 'prompts'), folder, { recursive: true });
    await setInFile(join(folder, 'action.md'), [/^# .*$/m, `# ${heading}`]);
  };
  const served = async (url: string, heading: string) => (await chat(url)).body.includes(`# ${heading}`);

  it('sees a prompt folder deleted and made again', async () => {
    const folder = join(dir, 'prompts');
    await promptsCopy(folder, 'Orchestrator one');
    const file = await writeFlagsConfig(dir, 'prompts.yaml');
    await setInFile(file, [/^prompts: .*$/m, `prompts: ${folder}`]);
    gateway = await startGateway({ configFile: file });
    const url = gateway.url;
    expect(await served(url, 'Orchestrator one')).toBe(true);
    await rm(folder, { recursive: true });
    await until(async () => gateway?.runtime.lastReload.ok === false, 'the reload that finds no prompt folder to fail');
    await promptsCopy(folder, 'Orchestrator two');
    await until(() => served(url, 'Orchestrator two'), 'the folder made again to be served');
    expect(gateway.runtime.lastReload.ok).toBe(true);
  });

  it('sees an edit to the file a symbolically linked config file points to', async () => {
    await mkdir(join(dir, 'real'));
    const target = await writeFlagsConfig(join(dir, 'real'), 'config.yaml');
    const link = join(dir, 'config.yaml');
    await symlink(target, link);
    gateway = await startGateway({ configFile: link });
    await setInFile(target, [/hard: true/, 'hard: false']);
    await until(async () => (await hardRoutingOf(gateway?.url ?? '')) === false, 'the edit through the link applied');
  });

  // Editors and configuration tools often truncate the file and then write it: the watch can catch it
  // empty. Read as every default, that moment flipped hard routing on and swapped in the shipped
  // prompts until the next save; it is rejected as a bad YAML is, and the running config stays.
  it('rejects the file caught empty during a save, keeping the configuration serving', async () => {
    const folder = join(dir, 'prompts');
    await cp(join(ROOT, 'prompts'), folder, { recursive: true });
    await setInFile(join(folder, 'soft-router.md'), [/^# .*$/m, '# Custom soft router']);
    const file = await writeFlagsConfig(dir, 'saved.yaml', { hard: false });
    await setInFile(file, [/^prompts: .*$/m, `prompts: ${folder}`]);
    const good = await readFile(file, 'utf8');
    gateway = await startGateway({ configFile: file });
    const { url, runtime } = gateway;
    const servesTheFile = async () => {
      expect(await hardRoutingOf(url)).toBe(false);
      const res = await chat(url);
      expect(res.routing).toBe('soft');
      expect(res.body).toContain('# Custom soft router');
    };
    await servesTheFile();
    for (const empty of ['', '# saving\n\n   \n']) {
      await writeFile(file, empty);
      await until(async () => runtime.lastReload.trigger === 'watch' && !runtime.lastReload.ok, 'the watch to reject the empty file', 15_000);
      expect(runtime.lastReload.errors.join('\n')).toMatch(/is empty/);
      await servesTheFile();
      // The second half of the save: the file is read again.
      await writeFile(file, good);
      await until(async () => runtime.lastReload.ok, 'the saved file to be reloaded', 15_000);
      await servesTheFile();
    }
  });

  it("sees a Kubernetes ConfigMap update: the mounted folder's ..data link swapped to a new folder", async () => {
    const mount = join(dir, 'mount');
    await mkdir(mount);
    const version = async (name: string, hard: boolean) => {
      await mkdir(join(mount, name));
      const written = await writeFlagsConfig(join(mount, name), 'config.yaml', { hard });
      return written;
    };
    await version('..2026_01_01', true);
    await symlink('..2026_01_01', join(mount, '..data'));
    await symlink('..data/config.yaml', join(mount, 'config.yaml'));
    gateway = await startGateway({ configFile: join(mount, 'config.yaml') });
    expect(await hardRoutingOf(gateway.url)).toBe(true);
    // As the kubelet does it: the new version beside the old, a link to it renamed over ..data, the old removed.
    await version('..2026_01_02', false);
    await symlink('..2026_01_02', join(mount, '..data_tmp'));
    await rename(join(mount, '..data_tmp'), join(mount, '..data'));
    await rm(join(mount, '..2026_01_01'), { recursive: true });
    await until(async () => (await hardRoutingOf(gateway?.url ?? '')) === false, 'the swapped version applied');
  });
});
