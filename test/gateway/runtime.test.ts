/**
 * RoutingRuntime on its own: what its config hash says and how a reload asked for during another one is
 * passed on, with real files on disk.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RoutingRuntime, type ReloadReach } from '../../gateway/runtime.js';

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

describe('a reload asked for while one runs', () => {
  // Two asked for while one runs share the one queued after it: it must reach as far as the widest of
  // them asked. A reload relayed from a peer (here) queued first must not keep an admin reload queued
  // after it from reaching the other workers and replicas.
  it('reaches as far as the widest of the calls that share it', async () => {
    const file = await configFile('reach.yaml', 'reload:\n  watch: false\n');
    const reaches: { trigger: string; reach: ReloadReach }[] = [];
    const runtime = await RoutingRuntime.start(file, {}, { reloaded: (_result, trigger, reach) => reaches.push({ trigger, reach }) });
    const running = runtime.reload('watch', 'everywhere');
    const fromPeer = runtime.reload('peer', 'here');
    const fromAdmin = runtime.reload('admin', 'everywhere');
    await Promise.all([running, fromPeer, fromAdmin]);
    expect(reaches).toHaveLength(2);
    expect(reaches[1]?.reach).toBe('everywhere');
    expect(reaches[1]?.trigger).toBe('admin');
  });

  it('relayed from peers only, stays where they asked', async () => {
    const file = await configFile('reach-here.yaml', 'reload:\n  watch: false\n');
    const reaches: ReloadReach[] = [];
    const runtime = await RoutingRuntime.start(file, {}, { reloaded: (_result, _trigger, reach) => reaches.push(reach) });
    await Promise.all([runtime.reload('peer', 'here'), runtime.reload('peer', 'here'), runtime.reload('SIGHUP', 'replicas'), runtime.reload('peer', 'here')]);
    expect(reaches).toEqual(['here', 'replicas']);
  });
});
