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

/**
 * Decodes UTF-8 and refuses anything else. readFile(…, 'utf8') replaces every byte that is not UTF-8
 * with U+FFFD, so a prompt saved as Latin-1 or Windows-1252 loaded "fine" and sent � in place of
 * each accented letter to the LLM on every request. A byte order mark is kept, as readFile keeps it
 * (see withoutBom).
 */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Thrown for a file that is not UTF-8: names the file, the first line that is not, and the fix. */
export class NotUtf8Error extends Error {
  constructor(readonly path: string, readonly line: number) {
    super(`${path} is not valid UTF-8 (line ${line} holds a byte UTF-8 text cannot: was it saved as Latin-1 or Windows-1252?); save it as UTF-8`);
    this.name = 'NotUtf8Error';
  }
}

/** `bytes` read from `path` as UTF-8 text; a NotUtf8Error when they are not UTF-8. */
export function utf8Text(bytes: Uint8Array, path: string): string {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    throw new NotUtf8Error(path, firstLineNotUtf8(bytes));
  }
}

/** The 1-based line of the first byte that is not UTF-8. A newline byte never occurs inside a UTF-8 sequence, so lines decode apart. */
function firstLineNotUtf8(bytes: Uint8Array): number {
  let line = 1;
  for (let start = 0; start <= bytes.length; line += 1) {
    const newline = bytes.indexOf(0x0a, start);
    const end = newline < 0 ? bytes.length : newline;
    try {
      STRICT_UTF8.decode(bytes.subarray(start, end));
    } catch {
      return line;
    }
    start = end + 1;
  }
  return line;
}

/** Reads a UTF-8 text file, with errors that name the file: one that cannot be read or is not UTF-8. */
export async function readTextFile(path: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    throw new Error(`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  return utf8Text(bytes, path);
}

/** Reads a JSON or YAML file (by extension), in UTF-8, with errors that name the file. */
export async function readDataFile(path: string): Promise<unknown> {
  const text = await readTextFile(path);
  try {
    return isYaml(path) ? parseYaml(text) : JSON.parse(withoutBom(text));
  } catch (error) {
    throw new Error(`${path} is not valid ${isYaml(path) ? 'YAML' : 'JSON'}: ${(error as Error).message}`);
  }
}
