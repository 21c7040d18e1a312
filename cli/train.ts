import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { afterThanks, compileRuleSet, contextFeatures, createClassifier, defaultRuleSet, ENGINES, readContext, trainScorer, type Classifier, type HashedFeatures, type ScorerData, type TrainedScorer, type TrainingFold, type TrainOptions, type Turns } from '../src/index.js';
import { digest, fnv1a } from '../src/scorer.js';
import { packageRoot } from '../middleware/files.js';
import { corpusTurns, readCorpus, sourceFiles, UsageError } from './corpus.js';


const TrainOptionsSchema = z
  .object({ bits: z.number().int().min(8).max(24), iterations: z.number().int().positive(), rate: z.number().positive(), l2: z.number().nonnegative(), unsureShare: z.number().min(0).max(1), missCost: z.number().positive() })
  .partial()
  .strict();

const ManifestSchema = z
  .object({
    /** Labelled files to train on: paths, or `folder/*.jsonl`. Lines with `text` train the scorer, lines with `messages` the context model. */
    sources: z.array(z.string().min(1)).min(1),
    /** The labelled corpora of the routing contract (test/corpus): in every fold's training lines and never left out, so their gates check that the models keep the contract. */
    contract: z.array(z.string().min(1)),
    /** Folds the lines of `sources` are cut into by their text's hash: one model is fitted without each fold, the models are averaged, and their margins on the folds they left out calibrate the average and place its threshold and band. */
    folds: z.number().int().min(2).max(20),
    options: TrainOptionsSchema,
    /** The context model's own settings, over `options`. */
    contextOptions: TrainOptionsSchema.optional(),
  })
  .strict();

export interface TrainedModel {
  readonly json: string;
  readonly lines: number;
  readonly development: TrainedScorer['development'];
}

/** Both models: the scorer (messages on their own) and the context model (conversations). */
export interface TrainResult {
  readonly scorer: TrainedModel;
  readonly context: TrainedModel;
}

function trained(folds: readonly TrainingFold[], linesDigest: string, options: TrainOptions): { data: ScorerData; model: TrainedModel } {
  const { data, development } = trainScorer(folds, linesDigest, options);
  return { data, model: { json: `${JSON.stringify(data, null, 2)}\n`, lines: data.trainedOn.lines, development } };
}

/**
 * Trains from data/training.json's sources with the rules as the first stage: the scorer on lines with
 * `text`, then the context model on lines with `messages`, whose features read the new scorer's decisions.
 */
export async function trainFromManifest(manifestFile: string, rules: unknown): Promise<TrainResult> {
  let manifest: z.infer<typeof ManifestSchema>;
  try {
    manifest = ManifestSchema.parse(JSON.parse(await readFile(manifestFile, 'utf8')));
  } catch (error) {
    throw new UsageError(`cannot use the training manifest ${manifestFile}: ${(error as Error).message}`);
  }
  const seen = new Set<string>();
  const texts: { text: string; action: boolean; contract: boolean }[] = [];
  const conversations: { key: string; turns: Turns; action: boolean; contract: boolean }[] = [];
  const read = async (sources: readonly string[], contract: boolean) => {
    for (const file of await sourceFiles(packageRoot(), sources)) {
      for (const { entry, line } of await readCorpus(file)) {
        const key = entry.text ?? JSON.stringify(entry.messages);
        if (seen.has(key)) continue;
        seen.add(key);
        const action = entry.expected === 'ACTION';
        // The models learn from what the gateway classifies: scaffolding stripped.
        const turns = corpusTurns(entry);
        if (turns === null) throw new UsageError(`${file}:${line}: no words of the user`);
        if (entry.text !== undefined) texts.push({ text: turns.latest, action, contract });
        else conversations.push({ key, turns, action, contract });
      }
    }
  };
  await read(manifest.contract, true);
  await read(manifest.sources, false);
  const ruleSet = rules ?? defaultRuleSet;
  const cues = compileRuleSet(ruleSet, ENGINES.re2js).context;
  if (cues === null) throw new UsageError('the rule set has no "context" cues: the context model cannot be trained');

  const rulesOnly: Classifier = createClassifier({ rules: ruleSet, scorer: null, context: null });
  const split = <T extends { action: boolean; contract: boolean }>(items: readonly T[], key: (item: T) => string, features: (item: T) => HashedFeatures): TrainingFold[] => {
    const examples = items.map((item) => ({ fold: item.contract ? -1 : fnv1a(key(item)) % manifest.folds, example: { features: features(item), action: item.action } }));
    return Array.from({ length: manifest.folds }, (_, fold) => ({
      train: examples.filter((one) => one.fold !== fold).map((one) => one.example),
      dev: examples.filter((one) => one.fold === fold).map((one) => one.example),
    }));
  };
  const textSplit = split(texts, (item) => item.text, (item) => rulesOnly.hashedFeatures(item.text));
  const textDigest = digest(texts.map((item) => `${item.action ? 1 : 0}${item.text}`).join('\n'));
  const scorer = trained(textSplit, textDigest, manifest.options);

  const withScorer = createClassifier({ rules: ruleSet, scorer: scorer.data, context: null });
  const contextSplit = split(conversations, (item) => item.key, ({ turns: given }) => {
    const turns = afterThanks(given, cues);
    return contextFeatures(turns, readContext(turns, cues, withScorer.classify), cues, withScorer.hashedFeatures(turns.latest));
  });
  const contextDigest = digest(conversations.map((item) => `${item.action ? 1 : 0}${item.key}`).join('\n'));
  const context = trained(contextSplit, contextDigest, { ...manifest.options, ...manifest.contextOptions });
  return { scorer: scorer.model, context: context.model };
}

const describe = (name: string, model: TrainedModel) =>
  `${name}: ${model.lines} examples; left out by the folds ${model.development.examples}: accuracy ${(model.development.accuracy * 100).toFixed(1)}%, unsure ${(model.development.unsure * 100).toFixed(1)}%`;

/**
 * `task-router train [--check]`: writes config/scorer.json and config/context.json, or checks that the
 * shipped files are what the data gives, bit for bit.
 */
export async function trainCommand(values: { check?: boolean | undefined }, rules: unknown): Promise<number> {
  const result = await trainFromManifest(join(packageRoot(), 'data', 'training.json'), rules);
  const outputs = [
    { file: join(packageRoot(), 'config', 'scorer.json'), model: result.scorer, name: 'scorer' },
    { file: join(packageRoot(), 'config', 'context.json'), model: result.context, name: 'context' },
  ];
  let differs = 0;
  for (const { file, model, name } of outputs) {
    if (!values.check) {
      await writeFile(file, model.json);
      process.stdout.write(`${file}: written (${describe(name, model)})\n`);
      continue;
    }
    let current = '';
    try {
      current = await readFile(file, 'utf8');
    } catch {
      // A missing file differs from any training result.
    }
    if (current === model.json) process.stdout.write(`${file}: reproduced bit for bit (${describe(name, model)})\n`);
    else {
      differs += 1;
      process.stdout.write(`${file}: differs from what the training data gives; run \`npm run train\` and commit the result\n`);
    }
  }
  return differs > 0 ? 1 : 0;
}
