/**
 * One pass of the rules over a message's matching form: the word rules by dictionary, then each
 * pattern rule whose hint literals occur in the text (one automaton finds them all), its match text
 * extracted only when it matched.
 */
import type { CompiledPattern } from './engines/engine.js';
import type { LiteralIndex } from './literals.js';
import { matchedText } from './match-text.js';
import { matchPhrases, type PhraseIndex } from './phrases.js';

export interface PatternRule {
  /** Index of the rule in the rule set. */
  readonly index: number;
  readonly pattern: CompiledPattern;
  /** The match may be looked for in windows cut at white space (see match-text.ts). */
  readonly windowed: boolean;
  /** Ids in the hint index of the literals one of which every match holds; null: no hints, always run. */
  readonly hintIds: readonly number[] | null;
}

/** Index into the rule set → the first text that rule matched; rules in `known` are not looked for again. */
export type RuleScan = (text: string, known?: ReadonlyMap<number, string>) => Map<number, string>;

export function createRuleScan(phrases: PhraseIndex, hints: LiteralIndex, patternRules: readonly PatternRule[]): RuleScan {
  // Hint literal id → the pattern rules (positions in patternRules) that name it.
  const rulesOf: number[][] = hints.literals.map(() => []);
  patternRules.forEach(({ hintIds }, rule) => {
    for (const id of hintIds ?? []) if (!rulesOf[id]?.includes(rule)) rulesOf[id]?.push(rule);
  });
  const unhinted = Int32Array.from(patternRules, ({ hintIds }) => (hintIds === null ? 0 : -1));
  const firstHint = new Int32Array(patternRules.length);
  return (text, known) => {
    const found = new Map<number, string>();
    matchPhrases(phrases, text, found);
    // Where each rule's earliest hint literal is, from the few literals the text holds.
    const positions = hints.firstPositions(text);
    firstHint.set(unhinted);
    for (const id of hints.found()) {
      const at = positions[id] as number;
      for (const rule of rulesOf[id] as number[]) {
        const first = firstHint[rule] as number;
        if (first === -1 || at < first) firstHint[rule] = at;
      }
    }
    patternRules.forEach(({ index, pattern, windowed }, rule) => {
      const at = firstHint[rule] as number;
      if (at === -1 || known?.has(index) || !pattern.test(text)) return;
      const match = matchedText(pattern, text, at, windowed);
      if (match !== null) found.set(index, match);
    });
    return found;
  };
}
