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
