/** Timing: stripping wrappers stays linear in the length of the text. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_WRAPPERS, stripWrappers, type Wrapper } from '../../src/index.js';

const strip = (text: string, wrappers: readonly Wrapper[] = DEFAULT_WRAPPERS) => stripWrappers(text, wrappers);

describe('stripWrappers', () => {
  it('stays linear on floods of opening tags with no close, and of nested unwrapped tags', () => {
    // The median of a few runs: one run can meet a collection or a busy core and read ten times slower.
    const time = (text: string, runs: number) => {
      const times: number[] = [];
      for (let run = 0; run < runs; run += 1) {
        const started = performance.now();
        strip(text);
        times.push(performance.now() - started);
      }
      return times.sort((a, b) => a - b)[Math.floor(runs / 2)] as number;
    };
    const floods = (n: number) => ['<system-reminder>'.repeat(n), `${'<task>'.repeat(n)}x</task>`, '<'.repeat(n * 10), `${'\n'.repeat(n)}x`];
    for (const [index, small] of floods(20_000).entries()) {
      const large = floods(200_000)[index] as string;
      // Both sizes run once before timing: timed first on code the JIT had not yet optimised, the large
      // input read up to 40x the small one in a fresh process.
      time(small, 2);
      time(large, 1);
      const ratio = time(large, 3) / Math.max(time(small, 5), 0.5);
      // 10x the input: a quadratic scan would take about 100x.
      expect(ratio).toBeLessThan(40);
    }
  });
});
