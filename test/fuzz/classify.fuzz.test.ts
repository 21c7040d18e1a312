/**
 * Fuzzing the classifier with the rules the gateway ships, at the scan budget's seam. (The properties
 * that also bound the time per call are in classify.fuzz.slow.test.ts.)
 */
import fc from 'fast-check';
import { beforeAll, describe, it } from 'vitest';
import type { RoutingSnapshot } from '../../middleware/task-router.js';
import { DecisionSchema } from '../../src/index.js';
import { defaultSnapshot } from '../support/fake-upstream.js';

let snapshot: RoutingSnapshot;
beforeAll(async () => {
  snapshot = await defaultSnapshot();
});

describe('classifier fuzz', () => {
  it('a cut at the scan seam never splits a surrogate pair into a lone half', () => {
    fc.assert(
      fc.property(fc.integer({ min: 16 * 1024 - 300, max: 16 * 1024 + 300 }), fc.constantFrom('😀', '𝐀', '\u{e0041}'), (length, astral) => {
        const text = astral.repeat(Math.ceil(length / 2)).slice(0, length);
        DecisionSchema.parse(snapshot.classifier.classify(text));
      }),
      { numRuns: 60 },
    );
  });
});
