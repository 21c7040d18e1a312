import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigSchema, DEFAULT_CONFIG_FILE, loadConfig } from '../../gateway/config.js';

const ROOT = join(import.meta.dirname, '..', '..');

describe('config/default.yaml and the schema say the same', () => {
  it('every value the shipped file writes out is the schema default', async () => {
    const shipped = parse(await readFile(join(ROOT, 'config', 'default.yaml'), 'utf8')) as Record<string, unknown>;
    // The file names the shipped rules and prompts relative to itself; the schema's null means the same files.
    const { rules: _rules, prompts: _prompts, ...rest } = shipped;
    const fromFile = ConfigSchema.parse({ ...rest, rules: null, prompts: null });
    expect(fromFile).toEqual(ConfigSchema.parse({}));
  });

  it('the shipped rules and prompts it names are the defaults the schema falls back to', async () => {
    const { rulesFile, promptsDir } = await loadConfig(DEFAULT_CONFIG_FILE);
    const defaults = ConfigSchema.parse({});
    expect(defaults.rules).toBeNull();
    expect(rulesFile).toBe(join(ROOT, 'config', 'rules.json'));
    expect(promptsDir).toBe(join(ROOT, 'prompts'));
  });
});

describe('upstream.url', () => {
  it('is a base URL: one with a query or fragment is refused, saying why', async () => {
    for (const url of ['http://127.0.0.1:9/api?key=abc', 'https://example.com/v1#x']) {
      const error = await loadConfig(DEFAULT_CONFIG_FILE, { UPSTREAM_URL: url }).then(() => null, (caught: unknown) => caught);
      expect((error as { issues?: string[] } | null)?.issues?.join('\n')).toMatch(/upstream\.url: a base URL without \?query or #fragment/);
    }
    expect((await loadConfig(DEFAULT_CONFIG_FILE, { UPSTREAM_URL: 'http://127.0.0.1:9/api/' })).config.upstream.url).toBe('http://127.0.0.1:9/api/');
  });
});
