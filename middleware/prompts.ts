import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PROMPT_FILES, type PromptSet } from '../src/index.js';
import { NotUtf8Error, packageRoot, utf8Text } from './files.js';

/** The shipped prompt folder. */
export const DEFAULT_PROMPTS_DIR = join(packageRoot(), 'prompts');

/** Thrown when prompt files cannot be used; `issues` names every bad file, in PROMPT_FILES order. */
export class PromptError extends Error {
  constructor(readonly issues: readonly string[]) {
    super(issues.join('\n'));
    this.name = 'PromptError';
  }
}

/** Loads every prompt file; a missing or empty one, or one not in UTF-8, is an error naming the file. */
export async function loadPrompts(dir: string = DEFAULT_PROMPTS_DIR): Promise<PromptSet> {
  const results = await Promise.all(
    Object.entries(PROMPT_FILES).map(async ([role, name]): Promise<{ role: string; text: string } | { issue: string }> => {
      const file = join(dir, name);
      let bytes: Buffer;
      try {
        bytes = await readFile(file);
      } catch (error) {
        return { issue: `prompt file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); every route needs its prompt` };
      }
      let text: string;
      try {
        text = utf8Text(bytes, file);
      } catch (error) {
        if (!(error instanceof NotUtf8Error)) throw error;
        return { issue: `prompt file ${error.message}` };
      }
      // Trimmed so the bytes we send are exactly the bytes we recognise as ours.
      if (text.trim() === '') return { issue: `prompt file ${file} is empty; write the ${role} prompt into it` };
      return { role, text: text.trim() };
    }),
  );
  const issues = results.flatMap((result) => ('issue' in result ? [result.issue] : []));
  if (issues.length > 0) throw new PromptError(issues);
  return Object.fromEntries(results.map((result) => ('role' in result ? [result.role, result.text] : []))) as unknown as PromptSet;
}
