/**
 * The settings for running more than one: server.workers (WORKERS, --workers) and state.redis
 * (REDIS_URL), validated at load with errors that say what to write; and with neither set, the gateway
 * is what it was: one process, state in its memory, nothing new on /admin/state or /metrics.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseRestartOnly, restartOnlySettings, withoutSecrets, withRestartOnly, workerCount } from '../../gateway/config.js';
import { ensureBuilt } from '../support/built.js';
import { scrape, startConfigured } from '../support/running.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-scale-config-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

async function rejection(load: Promise<unknown>): Promise<string> {
  const error = await load.then(() => null, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).issues.join('\n');
}

// A cluster primary hands a replacement worker the restart-only settings the others were started with.
describe('restart-only settings handed to a replacement worker', () => {
  it('read back as they were sent, and served in place of the file\'s, the log folder with them', async () => {
    const started = await loadConfig(await file('started.yaml', 'upstream:\n  url: http://127.0.0.1:1111\nlogging:\n  dir: first-logs\n'), { REDIS_URL: 'redis://user:secret@127.0.0.1:6379/0' });
    const sent = JSON.stringify(restartOnlySettings(started.config));
    const settings = parseRestartOnly(sent, 'the test');
    expect(settings).toEqual(restartOnlySettings(started.config));
    const now = await loadConfig(await file('edited.yaml', 'upstream:\n  url: http://127.0.0.1:2222\nlogging:\n  dir: other-logs\nrouting:\n  strategy: prepend\n'));
    const served = withRestartOnly(now, settings);
    expect(served.config.upstream.url).toBe('http://127.0.0.1:1111');
    expect(served.config.routing.strategy).toBe('prepend');
    expect(served.logDir).toBe(join(dir, 'first-logs'));
  });

  it('are refused, naming what is wrong, when they are not JSON or not every section is there and valid', () => {
    expect(() => parseRestartOnly('{nope', 'SETTINGS')).toThrow(/invalid configuration in SETTINGS:\n {2}- not valid JSON/);
    expect(() => parseRestartOnly('{"server": {"port": "x"}}', 'SETTINGS')).toThrow(/server\.port: .*expected number[\s\S]*upstream: /);
  });
});

describe('server.workers', () => {
  it('defaults to 1, takes a number or auto, and WORKERS wins over the file', async () => {
    const empty = await file('empty.yaml', '');
    expect((await loadConfig(empty)).config.server.workers).toBe(1);
    const four = await file('four.yaml', 'server: { workers: 4 }\n');
    expect((await loadConfig(four)).config.server.workers).toBe(4);
    expect((await loadConfig(four, { WORKERS: 'auto' })).config.server.workers).toBe('auto');
    expect((await loadConfig(four, { WORKERS: '2' })).config.server.workers).toBe(2);
    expect(workerCount('auto', 6)).toBe(6);
    expect(workerCount(3, 6)).toBe(3);
  });

  it('refuses what is not a number of workers, saying what is', async () => {
    expect(await rejection(loadConfig(await file('zero.yaml', 'server: { workers: 0 }\n')))).toMatch(/server\.workers: .*1 to 256, or auto/);
    expect(await rejection(loadConfig(await file('ok.yaml', ''), { WORKERS: 'lots' }))).toMatch(/WORKERS: expected a whole number of workers or auto, got "lots"/);
  });

  it('serve --workers 0 is a usage error', () => {
    const cli = ensureBuilt('cli/main.js');
    const run = spawnSync(process.execPath, [cli, 'serve', '--workers', '0'], { encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--workers must be a number of worker processes \(1 or more\) or auto/);
  });
});

describe('state.redis', () => {
  it('is off by default; REDIS_URL turns it on with the documented defaults', async () => {
    const empty = await file('none.yaml', '');
    expect((await loadConfig(empty)).config.state.redis).toBeNull();
    expect((await loadConfig(empty, { REDIS_URL: 'redis://10.0.0.5:6379/2' })).config.state.redis).toEqual({
      url: 'redis://10.0.0.5:6379/2', keyPrefix: 'task-router:', timeoutMs: 50, connectTimeoutMs: 1000, maxStateBytes: 256 * 1024,
    });
  });

  it('REDIS_URL keeps the rest of the file\'s redis settings', async () => {
    const tuned = await file('tuned.yaml', 'state: { redis: { url: "redis://a:1", keyPrefix: "blue:", timeoutMs: 80 } }\n');
    expect((await loadConfig(tuned, { REDIS_URL: 'redis://b:2' })).config.state.redis).toMatchObject({ url: 'redis://b:2', keyPrefix: 'blue:', timeoutMs: 80 });
  });

  it('names each bad field and what it should be', async () => {
    const issues = await rejection(loadConfig(await file('bad.yaml', 'state: { redis: { url: "http://cache:6379", keyPrefix: "has spaces", timeoutMs: 0, extra: 1 } }\n')));
    expect(issues).toMatch(/state\.redis\.url: a redis:\/\/ or rediss:\/\/ URL/);
    expect(issues).toMatch(/state\.redis\.keyPrefix: at most 64 letters, digits or :\._-/);
    expect(issues).toMatch(/state\.redis\.timeoutMs/);
    expect(issues).toMatch(/extra/);
  });

  it('keeps the URL\'s credentials out of hashes and displays', async () => {
    const secret = await file('secret.yaml', 'state: { redis: { url: "redis://user:hunter2@cache.internal:6380/1" } }\n');
    const shown = withoutSecrets((await loadConfig(secret)).config);
    expect(shown.state.redis?.url).toBe('redis://cache.internal:6380/1');
    expect(JSON.stringify(shown)).not.toContain('hunter2');
  });
});

describe('with neither', () => {
  it('one process with state in memory: no shared state on /admin/state, no state fallback series', async () => {
    const gateway = await startConfigured(dir, {}, { env: { ADMIN_TOKEN: 'plain-admin-token' } });
    try {
      const state = (await (await fetch(`${gateway.url}/admin/state`, { headers: { authorization: 'Bearer plain-admin-token' } })).json()) as Record<string, unknown>;
      expect(state).not.toHaveProperty('shared');
      expect(gateway.primary).toBeNull();
      const stages = (await scrape(gateway.url)).filter((sample) => sample.name === 'task_router_fallbacks_total').map((sample) => sample.labels.stage);
      expect(stages).not.toContain('state');
      expect(stages).toContain('session');
    } finally {
      await gateway.close();
    }
  });
});
