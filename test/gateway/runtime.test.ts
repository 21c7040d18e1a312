/**
 * RoutingRuntime on its own, with real files on disk.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RoutingRuntime } from '../../gateway/runtime.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-runtime-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function configFile(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

describe('the config hash', () => {
  // A cluster starts a replacement worker with ENABLE_HARD_ROUTING set to the flag the others hold: its
  // hash must be the one they show for the same files, or /healthz and the shared reload announcements
  // read it as a worker serving another configuration.
  it('is the file\'s, whatever ENABLE_HARD_ROUTING started the process with, and a reload of the same file keeps it', async () => {
    const file = await configFile('flag.yaml', 'reload:\n  watch: false\nrouting:\n  hard: true\n');
    const plain = await RoutingRuntime.start(file, {});
    const flipped = await RoutingRuntime.start(file, { ENABLE_HARD_ROUTING: 'false' });
    expect(flipped.snapshot().hardRouting).toBe(false);
    expect(flipped.config.routing.hard).toBe(false);
    expect(flipped.snapshot().configHash).toBe(plain.snapshot().configHash);
    const reloaded = await flipped.reload('admin');
    expect(reloaded).toMatchObject({ ok: true, configHash: plain.snapshot().configHash, hardRouting: false });
  });
});
