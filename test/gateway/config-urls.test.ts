/**
 * URLs in the configuration that carry credentials (user:password@host): the proxy never sends them to
 * the upstream and fetch refuses such a URL outright, while the startup log printed them, so they are
 * refused at load, without echoing them.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../gateway/config.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-config-urls-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function issuesOf(text: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const file = join(dir, 'config.yaml');
  await writeFile(file, text);
  const error = await loadConfig(file, env).then(() => null, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).issues.join('\n');
}

describe('credentials in a configured URL', () => {
  it('upstream.url with user:password is refused, saying to send keys as headers, and the password is not shown', async () => {
    const fromFile = await issuesOf('upstream:\n  url: https://alice:hunter2-upstream@llm.internal\n');
    expect(fromFile).toMatch(/upstream\.url: .*credentials/);
    expect(fromFile).toMatch(/header/);
    expect(fromFile).not.toContain('hunter2');
    const fromEnv = await issuesOf('{}\n', { UPSTREAM_URL: 'http://bob:hunter2-env@127.0.0.1:9' });
    expect(fromEnv).toMatch(/upstream\.url: .*credentials/);
    expect(fromEnv).not.toContain('hunter2');
    expect(await issuesOf('upstream:\n  url: https://token-only@llm.internal\n')).toMatch(/credentials/);
  });

  it('routing.tiebreak.url with user:password is refused (fetch cannot send a request to such a URL)', async () => {
    const issues = await issuesOf('routing:\n  onUnsure: tiebreak\n  tiebreak:\n    url: https://carol:hunter2-tiebreak@api.example/v1/chat/completions\n    model: m\n');
    expect(issues).toMatch(/routing\.tiebreak\.url: .*credentials/);
    expect(issues).toMatch(/apiKeyEnv/);
    expect(issues).not.toContain('hunter2');
  });

  it('URLs without credentials load as before', async () => {
    const file = join(dir, 'plain.yaml');
    await writeFile(file, 'upstream:\n  url: https://llm.internal:8443/base\nrouting:\n  onUnsure: tiebreak\n  tiebreak:\n    url: https://api.example/v1/chat/completions\n    model: m\n');
    const loaded = await loadConfig(file, {});
    expect(loaded.config.upstream.url).toBe('https://llm.internal:8443/base');
    expect(loaded.config.routing.tiebreak?.url).toBe('https://api.example/v1/chat/completions');
  });
});
