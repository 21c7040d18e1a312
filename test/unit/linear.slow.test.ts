import { performance } from 'node:perf_hooks';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClassifier, type Classifier } from '../../src/index.js';

// Timing: gross linearity. 10x the input must cost well under 40x the time. A budget above
// 1 MB makes the classifier read every character, so the whole pipeline (normalisation, look-alike folding,
// product names, word lookup, every RE2 pattern, question and trivial checks) is measured.

const SMALL = 100 * 1024;
const LARGE = 10 * SMALL;
const MAX_RATIO = 40;

const fill = (unit: string, length: number) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length);

const ADVERSARIAL: [string, (length: number) => string][] = [
  ['a run of one letter', (n) => fill('a', n)],
  ['a run of slashes', (n) => fill('/', n)],
  ['a run of dots', (n) => fill('.', n)],
  ['a run of spaces between two words', (n) => `x${fill(' ', n - 2)}y`],
  ['a run of hyphens', (n) => fill('-', n)],
  ['a run of backticks', (n) => fill('`', n)],
  ['a run of backslashes', (n) => fill('\\', n)],
  ['"and/or " repeated', (n) => fill('and/or ', n)],
  ['"1/2 24/7 " repeated', (n) => fill('1/2 24/7 ', n)],
  ['a zero-width flood', (n) => fill('\u200b', n)],
  ['zero-width characters inside a word, repeated', (n) => fill('f\u200bi\u200dx\u2060 ', n)],
  ['a combining-mark flood on one letter', (n) => `f${fill('\u0301', n - 3)}ix`],
  // Marks of two canonical classes alternating: put in canonical order, quadratic in the run's length.
  ['a flood of marks of two classes on one letter', (n) => `f${fill('\u0301\u0316', n - 3)}ix`],
  ['combining marks on every letter', (n) => fill('f\u0338i\u0338x\u0338 ', n)],
  ['a deep path a/a/a/…', (n) => fill('a/', n)],
  ['a deep relative path ./a/a/…', (n) => `./${fill('a/', n - 2)}`],
  ['a long dotted name a.a.a.…', (n) => fill('a.', n)],
  ['"node.js " repeated', (n) => fill('node.js ', n)],
  ['Cyrillic look-alike words', (n) => fill('аеіор ', n)],
  ['mixed-script words with у', (n) => fill('rуn fіx ', n)],
  ['"look " repeated (a phrase prefix)', (n) => fill('look ', n)],
  ['"what is " repeated', (n) => fill('what is ', n)],
  ['"hey, " repeated (question prefixes)', (n) => fill('hey, ', n)],
  ["\"don't \" repeated", (n) => fill("don't ", n)],
  ['"$(" repeated', (n) => fill('$(', n)],
  ['"http://" repeated', (n) => fill('http://', n)],
  ['"fix the tests " repeated', (n) => fill('fix the tests ', n)],
  ['emoji', (n) => fill('😀', n)],
  ['newlines', (n) => fill('\n', n)],
  ['CRLF and NBSP', (n) => fill('\r\n\u00a0', n)],
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Median time of `runs` classifications, and whether the last one read the whole text. */
function timeOf(classifier: Classifier, text: string, runs: number): { ms: number; whole: boolean } {
  const times: number[] = [];
  let whole = false;
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    const decision = classifier.classify(text);
    times.push(performance.now() - started);
    whole = !decision.scan.truncated;
  }
  return { ms: median(times), whole };
}

let classifier: Classifier;
beforeAll(() => {
  classifier = createClassifier({ scanBudget: 2 * LARGE });
});

describe('classification time grows linearly with the input', () => {
  it.each(ADVERSARIAL)('%s: 10x the input costs under 40x the time', (_name, make) => {
    const small = make(SMALL);
    const large = make(LARGE);
    expect(small.length).toBeGreaterThanOrEqual(SMALL - 2);
    expect(large.length).toBeGreaterThanOrEqual(LARGE - 2);
    // Both sizes are warmed up: a text's first runs pay one-off costs (the first 1 MB runs of some
    // inputs took 2.5x the later ones), which are not the growth this measures.
    timeOf(classifier, small, 2);
    timeOf(classifier, large, 2);
    const smallRun = timeOf(classifier, small, 5);
    const largeRun = timeOf(classifier, large, 3);
    // The whole text is read, at both sizes.
    expect(smallRun.whole).toBe(true);
    expect(largeRun.whole).toBe(true);
    const smallTime = Math.max(smallRun.ms, 0.5);
    const largeTime = largeRun.ms;
    expect(largeTime / smallTime, `100 KB: ${smallTime.toFixed(1)} ms, 1 MB: ${largeTime.toFixed(1)} ms`).toBeLessThan(MAX_RATIO);
  }, 120_000);
});
