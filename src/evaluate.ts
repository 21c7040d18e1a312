import { z } from 'zod';
import type { Decision, Mode } from './decision.js';

const ChatMessage = z.looseObject({ role: z.string(), content: z.unknown() });

/** The fields of a corpus line. Other keys are allowed (corpora carry notes such as `why`) and ignored. */
const CorpusLineFields = z
  .object({
    text: z.string().optional(),
    messages: z.array(ChatMessage).min(1).optional(),
    expected: z.enum(['ANSWER', 'ACTION']),
    /** Answering needs file, web or tool work: routing it to ANSWER is a false negative. */
    needs_ops: z.boolean().optional(),
    category: z.string().optional(),
    trivial: z.boolean().optional(),
    lang: z.string().optional(),
  })
  .refine((line) => (line.text === undefined) !== (line.messages === undefined), 'a line has "text" or "messages", one of the two')
  // data/LABELLING.md: needs_ops is false "for every ANSWER line". True there contradicts the label, and
  // the gate it carries (zero false negatives) would count the line's correct routing as a miss.
  .refine((line) => !(line.needs_ops === true && line.expected === 'ANSWER'), {
    path: ['needs_ops'],
    message: 'true on a line expected ANSWER: needs_ops marks a message only tool work can serve (data/LABELLING.md); label it ACTION or set needs_ops to false',
  });

const FIELD_NAMES = Object.keys(CorpusLineFields.shape);
/** A key as it is likely mistyped: case, `-` and `_` dropped. */
const looseForm = (key: string): string => key.toLowerCase().replace(/[-_\s]/g, '');

/** Whether `a` becomes `b` by one inserted, dropped, changed or swapped character. */
function oneEditApart(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1 || a === b) return false;
  let start = 0;
  while (start < a.length && a[start] === b[start]) start += 1;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA -= 1;
    endB -= 1;
  }
  const restA = a.slice(start, endA);
  const restB = b.slice(start, endB);
  if (restA.length <= 1 && restB.length <= 1) return true;
  return restA.length === 2 && restB.length === 2 && restA[0] === restB[1] && restA[1] === restB[0];
}

/**
 * The field an unknown key was probably meant to be: the same once case, `-` and `_` are set aside
 * ("needs-ops", "Expected"), or, for the longer names, one typo away ("catgory"). Null for a key that
 * is no such slip, which a line may carry.
 */
function meantField(key: string): string | null {
  if (FIELD_NAMES.includes(key)) return null;
  const loose = looseForm(key);
  return FIELD_NAMES.find((field) => looseForm(field) === loose || (looseForm(field).length >= 6 && oneEditApart(looseForm(field), loose))) ?? null;
}

/**
 * One labelled corpus line: a message (`text`) or a conversation (`messages`, OpenAI chat shape) whose
 * last user turn is labelled. A key that is a slip for a field is refused: ignored, "needs-ops" would
 * silently turn off the false-negative gate for its line.
 */
export const CorpusLineSchema = z
  .unknown()
  .superRefine((value, context) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
    for (const key of Object.keys(value)) {
      const meant = meantField(key);
      if (meant !== null) context.addIssue({ code: 'custom', path: [key], message: `unknown key, did you mean "${meant}"? (spelt otherwise, it is ignored)` });
    }
  })
  .pipe(CorpusLineFields);
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
  /** Decisions whose score fell in the unsure band, and the accuracy of the rest. */
  readonly unsure: { readonly count: number; readonly rate: number; readonly sureAccuracy: number };
  /** Accuracy when every unsure decision is sent to ANSWER, or to ACTION, instead of the forced choice. */
  readonly policies: { readonly answer: number; readonly action: number };
}

/** The text a corpus line routes: its `text`, or the last user turn of its `messages`. */
export function corpusText(entry: CorpusLine): string {
  if (entry.text !== undefined) return entry.text;
  const last = [...(entry.messages ?? [])].reverse().find((message) => message.role === 'user');
  return typeof last?.content === 'string' ? last.content : JSON.stringify(last?.content ?? '');
}

/**
 * Scores decisions against labels. Correct means the right mode and, for lines labelled trivial, the fast
 * path; a false positive is an ANSWER line routed to ACTION; a false negative is a needs_ops line routed
 * to ANSWER.
 */
export function evaluate(lines: readonly { line: number; entry: CorpusLine; decision: Decision }[]): EvalReport {
  const confusion: Record<Mode, Record<Mode, number>> = { ANSWER: { ANSWER: 0, ACTION: 0 }, ACTION: { ANSWER: 0, ACTION: 0 } };
  // Categories are the corpus's own strings: in a plain object, "__proto__" or "constructor" would name
  // Object.prototype or Object itself, and their counts would be written onto every object there is.
  const categories = new Map<string, { total: number; correct: number; accuracy: number }>();
  const misses: Miss[] = [];
  let correct = 0;
  let unsure = 0;
  let sureCorrect = 0;
  const policyCorrect = { answer: 0, action: 0 };
  let answers = 0;
  let falsePositives = 0;
  let falseNegatives = 0;

  for (const { line, entry, decision } of lines) {
    const got = decision.mode;
    confusion[entry.expected][got] += 1;
    if (entry.expected === 'ANSWER') answers += 1;
    const fastPathRight = entry.trivial === undefined || entry.trivial === decision.trivial;
    const right = got === entry.expected && fastPathRight;
    if (decision.unsure) {
      unsure += 1;
      if (entry.expected === 'ANSWER') policyCorrect.answer += 1;
      else if (fastPathRight) policyCorrect.action += 1;
    } else if (right) {
      sureCorrect += 1;
      policyCorrect.answer += 1;
      policyCorrect.action += 1;
    }
    const category = entry.category ?? 'uncategorised';
    let bucket = categories.get(category);
    if (bucket === undefined) {
      bucket = { total: 0, correct: 0, accuracy: 0 };
      categories.set(category, bucket);
    }
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
    misses.push({ line, text: corpusText(entry), category, expected: entry.expected, got, kind, step: decision.step, triggers: decision.triggers.map((t) => `${t.rule}:${t.match}`) });
  }
  // The report keeps its JSON shape, an object by category, with no prototype: every category an own
  // key of it, "__proto__" included, and nothing inherited read as a category.
  const byCategory: Record<string, { total: number; correct: number; accuracy: number }> = Object.create(null);
  for (const [name, bucket] of categories) {
    bucket.accuracy = bucket.total ? bucket.correct / bucket.total : 0;
    byCategory[name] = bucket;
  }

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
  const sure = total - unsure;
  return {
    total, correct, accuracy, falsePositives, falsePositiveRate, falseNegatives, confusion, categories: byCategory, misses, gates,
    unsure: { count: unsure, rate: total ? unsure / total : 0, sureAccuracy: sure ? sureCorrect / sure : 0 },
    policies: { answer: total ? policyCorrect.answer / total : 0, action: total ? policyCorrect.action / total : 0 },
  };
}
