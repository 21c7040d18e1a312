import { RE2JS } from 're2js';
import type { RegexEngine } from './engine.js';
import { buildCaptureFinder, type CaptureFinder } from './captures.js';
import { buildAsciiDfa, type AsciiDfa } from './lazy-dfa.js';
import { asciiTakes, programOf } from './re2-program.js';

/**
 * Pure-JS RE2 port. Each pattern runs on its own: re2js's set match keeps a DFA state for every
 * combination of patterns matched so far, and on this rule set it cost over 0.5 ms per unseen message
 * against about 1 µs per pattern run alone (see the README's benchmark notes).
 *
 * On ASCII text (all the rules see) a lazy DFA of our own over re2js's compiled program answers `test`
 * and finds where the first match starts, and captures.ts reads the match's groups from that point only.
 * Other text, or a program they do not know, goes to re2js alone.
 */
export const re2jsEngine: RegexEngine = {
  name: 're2js',
  maxInput: Number.MAX_SAFE_INTEGER,
  compile(source) {
    const pattern = RE2JS.compile(source);
    const group = pattern.groupCount() > 0 ? 1 : 0;
    const program = programOf(pattern);
    let dfa: AsciiDfa | null = null;
    let captures: CaptureFinder | null = null;
    if (program !== null) {
      const takes = asciiTakes(program);
      dfa = buildAsciiDfa(program, takes);
      captures = buildCaptureFinder(program, pattern.groupCount(), takes);
    }
    /** Text of the first match searching from the start: re2js alone. */
    const search = (text: string): string | null => {
      const matcher = pattern.matcher(text);
      // Group 1 may sit out a match (`a(b)?`): then the whole match is the text, as on re2-wasm.
      return matcher.find() ? (matcher.group(group) ?? matcher.group(0)) : null;
    };
    return {
      test: (text) => dfa?.test(text) ?? pattern.test(text),
      firstMatch(text) {
        const start = dfa?.leftmostStart(text) ?? null;
        if (start === -1) return null;
        const found = start === null ? null : (captures?.matchAt(text, start) ?? null);
        if (found === null) return search(text);
        // As in `search`: group 1, or the whole match when group 1 sat out.
        const at = group === 1 && ((found[2] as number) >= 0 || (found[3] as number) >= 0) ? 2 : 0;
        return text.slice(found[at] as number, found[at + 1] as number);
      },
    };
  },
};
