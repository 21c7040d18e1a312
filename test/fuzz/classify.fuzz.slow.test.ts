/**
 * Fuzzing the classifier with the rules the gateway ships: whatever the text (any code point, lone
 * surrogates, floods of invisible characters, megabytes), classify never throws, its decision always
 * validates against DecisionSchema, it is deterministic, and it takes bounded time. (The untimed
 * property, the scan seam, is in classify.fuzz.test.ts.)
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RoutingSnapshot } from '../../middleware/task-router.js';
import { DecisionSchema, type Decision } from '../../src/index.js';
import { defaultSnapshot } from '../support/fake-upstream.js';

/** Per call, on a slow shared CI core: the scan budget makes the cost flat past 16 KiB. */
const MAX_MS = 250;

let snapshot: RoutingSnapshot;
beforeAll(async () => {
  snapshot = await defaultSnapshot();
});

/** One UTF-16 unit that is half of a surrogate pair, alone. */
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
/** Zero-width, joiner, bidi, soft hyphen, variation selector, tag and other invisible characters. */
const INVISIBLE = ['\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u180e', '\u202e', '\u202d', '\u2066', '\u034f', '\ufe0f', '\u{e0041}', '\u{e007f}', '\u3164', '\u115f'];
const invisible = fc.constantFrom(...INVISIBLE);
/** Words the rules look for, so fuzzed text also walks the ACTION paths. */
const WORDS = ['fix', 'deploy', 'the', 'api', 'to prod', 'src/app.ts', 'rm -rf', 'git push', 'pwd', 'ls', 'what is', '?', "don't", 'wait', 'go ahead', 'http://x.io/a?token=sk-abc', 'run', 'tests', '$ ', '\n', ' '];
const word = fc.constantFrom(...WORDS);

const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
  fc.string({ unit: fc.oneof(loneSurrogate, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), invisible, word), maxLength: 300 }),
  // Trigger words with invisible characters flooded between their letters.
  fc.tuple(fc.array(word, { minLength: 1, maxLength: 12 }), invisible, fc.integer({ min: 1, max: 50 }))
    .map(([words, mark, times]) => words.join(' ').split('').join(mark.repeat(times))),
);

function classifyTimed(text: string): { decision: Decision; ms: number } {
  const started = performance.now();
  const decision = snapshot.classifier.classify(text);
  return { decision, ms: performance.now() - started };
}

/** Everything but the measured time. */
const stable = ({ micros: _micros, ...rest }: Decision) => rest;

describe('classifier fuzz', () => {
  it('any text: never throws, validates, is deterministic and quick', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const { decision, ms } = classifyTimed(text);
        DecisionSchema.parse(decision);
        expect(ms).toBeLessThan(MAX_MS);
        expect(decision.scan.length).toBe(text.length);
        // Where the scorer agrees with the rules the rules' step stands; where it overturns them the step is `scorer`.
        if (decision.step === 'fast_path' || decision.step === 'triggers') expect(decision.mode).toBe('ACTION');
        if (decision.step === 'question' || decision.step === 'default') expect(decision.mode).toBe('ANSWER');
        if (decision.trivial) expect(decision.mode).toBe('ACTION');
        expect(stable(snapshot.classifier.classify(text))).toEqual(stable(decision));
      }),
      { numRuns: 1_500 },
    );
  });

  it('huge text (up to 8 MiB, any content): the time stays flat because only the scan budget is read', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.oneof(loneSurrogate, invisible, word, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), minLength: 1, maxLength: 64 }),
        fc.integer({ min: 100_000, max: 8 * 1024 * 1024 }),
        (chunk, length) => {
          const text = chunk.repeat(Math.ceil(length / chunk.length)).slice(0, length);
          const { decision, ms } = classifyTimed(text);
          DecisionSchema.parse(decision);
          // Each end reads at most 8 x half the budget in raw characters (invisible ones cost no budget but
          // take time to read), so a longer text is never read whole.
          if (length > 2 * 8 * 8 * 1024) expect(decision.scan.truncated).toBe(true);
          expect(decision.scan.scanned).toBeLessThanOrEqual(16 * 1024);
          expect(ms).toBeLessThan(MAX_MS);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('invisible characters alone, in floods of up to 1 MiB', () => {
    fc.assert(
      fc.property(fc.array(invisible, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 1024 * 1024 }), (marks, length) => {
        const text = marks.join('').repeat(Math.ceil(length / marks.join('').length)).slice(0, length);
        const { decision, ms } = classifyTimed(text);
        DecisionSchema.parse(decision);
        expect(ms).toBeLessThan(MAX_MS);
        // Nothing visible, nothing to act on.
        expect(decision.mode).toBe('ANSWER');
      }),
      { numRuns: 40 },
    );
  });
});
