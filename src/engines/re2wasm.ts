import re2wasm from 're2-wasm';
import type { CompiledPattern, RegexEngine } from './engine.js';

const { RE2 } = re2wasm;

/**
 * RE2 compiled to WebAssembly. Its heap is fixed at 16 MB and an input of a few MB exhausts it for good,
 * so it is never handed more than `maxInput` characters (the classifier caps its scan budget by it).
 */
const compiled = new Map<string, CompiledPattern>();

export const re2wasmEngine: RegexEngine = {
  name: 're2-wasm',
  maxInput: 512 * 1024,
  // re2-wasm can never free a compiled pattern, so each source is compiled once per process: reloading
  // the same rules costs nothing, and only a changed pattern takes more of the fixed heap.
  compile(source) {
    const known = compiled.get(source);
    if (known) return known;
    const pattern = new RE2(source, 'u');
    const result: CompiledPattern = {
      test: (text) => {
        pattern.lastIndex = 0;
        return pattern.test(text);
      },
      // Only the matched text is used: re2-wasm reports positions in code points, not UTF-16 units.
      firstMatch(text) {
        pattern.lastIndex = 0;
        const match = pattern.exec(text);
        if (match === null) return null;
        return match[1] ?? match[0] ?? null;
      },
    };
    compiled.set(source, result);
    return result;
  },
};
