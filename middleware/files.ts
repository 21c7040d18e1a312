import { readFile } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

/** The package's own folder, whether this runs from dist/ or from source. */
export function packageRoot(): string {
  const parent = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  return basename(parent) === 'dist' ? dirname(parent) : parent;
}

/** Whether readDataFile reads `path` as YAML (.yaml, .yml); every other name is read as JSON. */
export const isYaml = (path: string) => /\.ya?ml$/i.test(path);

/**
 * `text` without the one byte order mark that may start it. Windows editors and PowerShell redirection
 * write UTF-8 with one; the YAML parser skips it, JSON.parse refuses it as an unexpected character.
 */
export function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Reads a JSON or YAML file (by extension), with errors that name the file. */
export async function readDataFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  try {
    return isYaml(path) ? parseYaml(text) : JSON.parse(withoutBom(text));
  } catch (error) {
    throw new Error(`${path} is not valid ${isYaml(path) ? 'YAML' : 'JSON'}: ${(error as Error).message}`);
  }
}
