import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PROMPT_FILES, type PromptSet } from '../src/index.js';
import { packageRoot } from './files.js';

/** The shipped prompt folder. */
export const DEFAULT_PROMPTS_DIR = join(packageRoot(), 'prompts');

/** Loads every prompt file; a missing or empty one is an error naming the file. */
export async function loadPrompts(dir: string = DEFAULT_PROMPTS_DIR): Promise<PromptSet> {
  const entries = await Promise.all(
    Object.entries(PROMPT_FILES).map(async ([role, name]) => {
      const file = join(dir, name);
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        throw new Error(`prompt file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); every route needs its prompt`);
      }
      // Trimmed so the bytes we send are exactly the bytes we recognise as ours.
      if (text.trim() === '') throw new Error(`prompt file ${file} is empty; write the ${role} prompt into it`);
      return [role, text.trim()] as const;
    }),
  );
  return Object.fromEntries(entries) as unknown as PromptSet;
}
