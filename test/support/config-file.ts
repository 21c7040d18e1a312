import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse, stringify } from 'yaml';

export const ROOT = resolve(import.meta.dirname, '../..');

type Changes = Record<string, Record<string, unknown>>;

/**
 * Writes a config file: the shipped config/default.yaml with absolute rule and prompt paths, port 0,
 * no file watch, and `changes` merged in section by section.
 */
export async function writeTestConfig(dir: string, name: string, changes: Changes = {}): Promise<string> {
  const config = parse(await readFile(join(ROOT, 'config/default.yaml'), 'utf8')) as Record<string, unknown>;
  config.rules = join(ROOT, 'config/rules.json');
  config.prompts = join(ROOT, 'prompts');
  const base: Changes = { server: { port: 0 }, reload: { watch: false, debounceMs: 50 } };
  for (const section of new Set([...Object.keys(base), ...Object.keys(changes)])) {
    const value = changes[section] ?? base[section];
    config[section] = typeof config[section] === 'object' && config[section] !== null
      ? { ...(config[section] as object), ...base[section], ...changes[section] }
      : value;
  }
  const file = join(dir, name);
  await writeFile(file, stringify(config));
  return file;
}
