import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { withoutBom } from '../middleware/files.js';
import { CorpusLineSchema, DEFAULT_WRAPPERS, stripWrappers, turnsOf, type CorpusLine, type Turns, type Wrapper } from '../src/index.js';

/** A command-line mistake: exit 2 with the usage. */
export class UsageError extends Error {}

export interface CorpusEntry {
  readonly file: string;
  readonly line: number;
  readonly entry: CorpusLine;
}

/** Reads a labelled JSONL corpus; every invalid line is named in one error. */
export async function readCorpus(file: string): Promise<CorpusEntry[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const entries: CorpusEntry[] = [];
  const problems: string[] = [];
  withoutBom(text).split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    const line = index + 1;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      problems.push(`${file}:${line}: invalid JSON (${(error as Error).message})`);
      return;
    }
    const parsed = CorpusLineSchema.safeParse(value);
    if (!parsed.success) {
      problems.push(`${file}:${line}: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'line'}: ${issue.message}`).join('; ')}`);
      return;
    }
    entries.push({ file, line, entry: parsed.data });
  });
  if (problems.length > 0) throw new UsageError(`the corpus has invalid lines (expected {"text" or "messages", "expected": "ANSWER"|"ACTION", "needs_ops"?, "category"?}):\n${problems.join('\n')}`);
  return entries;
}

/**
 * The files a list of sources names, in a stable order: a plain path, or `folder/*.jsonl` for every
 * .jsonl file in the folder, sorted by name. Paths are relative to `root`.
 */
export async function sourceFiles(root: string, sources: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const source of sources) {
    if (!source.endsWith('/*.jsonl')) {
      files.push(join(root, source));
      continue;
    }
    const folder = join(root, dirname(source));
    const names = (await readdir(folder)).filter((name) => name.endsWith('.jsonl')).sort();
    files.push(...names.map((name) => join(folder, name)));
  }
  return files.map((file) => relative(process.cwd(), file) || file);
}

/** Turns with agent scaffolding stripped, as on the request path; null when nothing of the user is left. */
export function stripTurns(turns: Turns, wrappers: readonly Wrapper[] = DEFAULT_WRAPPERS): Turns | null {
  const strip = (text: string | null) => (text === null ? null : stripWrappers(text, wrappers).text || null);
  const latest = strip(turns.latest);
  return latest === null ? null : { latest, previous: strip(turns.previous), assistant: strip(turns.assistant) };
}

/** What the gateway would classify for a corpus line: its text, or the turns of its `messages`, scaffolding stripped. */
export function corpusTurns(entry: CorpusLine): Turns | null {
  const turns = entry.text !== undefined ? { latest: entry.text, previous: null, assistant: null } : turnsOf(entry.messages ?? []);
  return turns === null ? null : stripTurns(turns);
}
