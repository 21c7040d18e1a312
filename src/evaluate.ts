import { z } from 'zod';
import type { Decision, Mode } from './decision.js';

/** One labelled corpus line. */
export const CorpusLineSchema = z.object({
  text: z.string(),
  expected: z.enum(['ANSWER', 'ACTION']),
  /** Answering needs file, web or tool work: routing it to ANSWER is a false negative. */
  needs_ops: z.boolean().optional(),
  category: z.string().optional(),
  trivial: z.boolean().optional(),
});
export type CorpusLine = z.infer<typeof CorpusLineSchema>;

/** The seed's quality gates. */
export const GATES = { minAccuracy: 0.9, maxFalsePositiveRate: 0.05, maxFalseNegatives: 0 } as const;

export interface Miss {
  readonly line: number;
  readonly text: string;
  readonly category: string;
  readonly expected: Mode;
  readonly got: Mode;
  readonly kind: 'false_positive' | 'false_negative' | 'wrong_mode' | 'wrong_fast_path';
  readonly step: Decision['step'];
  readonly triggers: readonly string[];
}

export interface EvalReport {
  readonly total: number;
  readonly correct: number;
  readonly accuracy: number;
  readonly falsePositives: number;
  readonly falsePositiveRate: number;
  readonly falseNegatives: number;
  /** confusion[expected][got] */
  readonly confusion: Record<Mode, Record<Mode, number>>;
  readonly categories: Record<string, { total: number; correct: number; accuracy: number }>;
  readonly misses: readonly Miss[];
  readonly gates: { accuracy: boolean; falsePositiveRate: boolean; falseNegatives: boolean; passed: boolean };
}

/**
 * Scores decisions against labels. Correct means the right mode and, for lines labelled trivial, the fast
 * path; a false positive is an ANSWER line routed to ACTION; a false negative is a needs_ops line routed
 * to ANSWER.
 */
export function evaluate(lines: readonly { line: number; entry: CorpusLine; decision: Decision }[]): EvalReport {
  const confusion: Record<Mode, Record<Mode, number>> = { ANSWER: { ANSWER: 0, ACTION: 0 }, ACTION: { ANSWER: 0, ACTION: 0 } };
  const categories: Record<string, { total: number; correct: number; accuracy: number }> = {};
  const misses: Miss[] = [];
  let correct = 0;
  let answers = 0;
  let falsePositives = 0;
  let falseNegatives = 0;

  for (const { line, entry, decision } of lines) {
    const got = decision.mode;
    confusion[entry.expected][got] += 1;
    if (entry.expected === 'ANSWER') answers += 1;
    const fastPathRight = entry.trivial === undefined || entry.trivial === decision.trivial;
    const right = got === entry.expected && fastPathRight;
    const category = entry.category ?? 'uncategorised';
    const bucket = (categories[category] ??= { total: 0, correct: 0, accuracy: 0 });
    bucket.total += 1;
    if (right) {
      correct += 1;
      bucket.correct += 1;
      continue;
    }
    let kind: Miss['kind'] = got !== entry.expected ? 'wrong_mode' : 'wrong_fast_path';
    if (entry.expected === 'ANSWER' && got === 'ACTION') {
      falsePositives += 1;
      kind = 'false_positive';
    }
    if (entry.needs_ops && got === 'ANSWER') {
      falseNegatives += 1;
      kind = 'false_negative';
    }
    misses.push({ line, text: entry.text, category, expected: entry.expected, got, kind, step: decision.step, triggers: decision.triggers.map((t) => `${t.rule}:${t.match}`) });
  }
  for (const bucket of Object.values(categories)) bucket.accuracy = bucket.total ? bucket.correct / bucket.total : 0;

  const total = lines.length;
  const accuracy = total ? correct / total : 0;
  const falsePositiveRate = answers ? falsePositives / answers : 0;
  const gates = {
    accuracy: accuracy > GATES.minAccuracy,
    falsePositiveRate: falsePositiveRate < GATES.maxFalsePositiveRate,
    falseNegatives: falseNegatives <= GATES.maxFalseNegatives,
    passed: false,
  };
  gates.passed = gates.accuracy && gates.falsePositiveRate && gates.falseNegatives;
  return { total, correct, accuracy, falsePositives, falsePositiveRate, falseNegatives, confusion, categories, misses, gates };
}
