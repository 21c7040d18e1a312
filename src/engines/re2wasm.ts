import re2wasm from 're2-wasm';
import type { CompiledPattern, RegexEngine } from './engine.js';

const { RE2 } = re2wasm;

function compilePattern(source: string): CompiledPattern {
  const pattern = new RE2(source, 'u');
  return {
    // Only the matched text is used: re2-wasm reports positions in code points, not UTF-16 units.
    firstMatch(text) {
      pattern.lastIndex = 0;
      const match = pattern.exec(text);
      if (match === null) return null;
      return match[1] ?? match[0] ?? null;
    },
  };
}

/**
 * RE2 compiled to WebAssembly. Its heap is fixed at 16 MB and an input of a few MB exhausts it for good,
 * so it is never handed more than `maxInput` characters; it has no set match, so patterns run one by one.
 */
export const re2wasmEngine: RegexEngine = {
  name: 're2-wasm',
  maxInput: 512 * 1024,
  compile: compilePattern,
  compileSet(sources) {
    const patterns = sources.map(compilePattern);
    return (text) => {
      const matched: number[] = [];
      patterns.forEach((pattern, index) => {
        if (pattern.firstMatch(text) !== null) matched.push(index);
      });
      return matched;
    };
  },
};
