import { createClassifier, readWrappers } from '../src/index.js';
import { fingerprint, withoutSecrets, type LoadedConfig } from './config.js';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { packageRoot, readDataFile } from '../middleware/files.js';
import { loadPrompts } from '../middleware/prompts.js';
import type { RoutingSnapshot } from '../middleware/task-router.js';
import { createTiebreaker } from './tiebreak.js';

/** Reads the rule set and prompts a configuration names and compiles them into a routing snapshot. */
export async function buildSnapshot(loaded: LoadedConfig): Promise<RoutingSnapshot> {
  const { config } = loaded;
  const [rules, prompts, wrapperData] = await Promise.all([readDataFile(loaded.rulesFile), loadPrompts(loaded.promptsDir), readDataFile(loaded.wrappersFile)]);
  let wrappers;
  try {
    wrappers = readWrappers(wrapperData);
  } catch (error) {
    throw new Error(`${loaded.wrappersFile}: ${(error as Error).message}`);
  }
  const classifier = createClassifier({ rules, engine: config.routing.engine, scanBudget: config.routing.scanBudget, now: () => performance.now() });
  for (const text of await warmupTexts()) classifier.classify(text);
  return {
    classifier,
    prompts,
    wrappers,
    strategy: config.routing.strategy,
    hardRouting: config.routing.hard,
    allowOverride: config.routing.overrides,
    overrideToken: config.routing.overrideToken,
    overridesOpen: config.routing.overridesOpen,
    scanBudget: config.routing.scanBudget,
    onUnsure: config.routing.onUnsure,
    tiebreaker: config.routing.tiebreak === null
      ? null
      : createTiebreaker({ ...config.routing.tiebreak, apiKey: loaded.tiebreakKey, prompt: prompts.tiebreak }),
    // The hash is shown on /healthz: a secret in it could be guessed offline.
    configHash: fingerprint(withoutSecrets(config), rules, prompts, wrappers),
  };
}

/** Sample messages classified at load: the automata are built then, not on the first requests. */
async function warmupTexts(): Promise<string[]> {
  try {
    const text = await readFile(join(packageRoot(), 'config', 'warmup.txt'), 'utf8');
    return text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
  } catch {
    return [];
  }
}
