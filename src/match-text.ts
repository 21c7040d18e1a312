/**
 * The text a pattern rule matched, for the trigger's explanation, `distinct` and the negation checks.
 * Whether the rule matched is decided by a test on the whole text before this runs, never here; this
 * only finds the words, and only for rules that matched. An engine's `firstMatch` reads the text it is
 * given, so the match is looked for in a small piece near the first hint literal rather than in the
 * whole text, and the pieces are cut the same way whatever the engine.
 */
import type { CompiledPattern } from './engines/engine.js';

/**
 * `^` and `$` written as one side of a choice with a class that holds white space: `(?:^|[\s…]`,
 * `(?:^|[^a-z…]`, `(?:[^a-z…]|$)`, `(?:$|[^a-z…]`. A pattern whose every `^` and `$` reads so matches
 * inside a window cut at white space exactly as it does there in the whole text.
 */
const EDGE_AS_SPACE = /\(\?:[$^]\|\[(?:\\s|\^[^\]\\\s]*\])|\[\^[^\]\\\s]*\]\|\$\)/g;

/** Whether a pattern (as the engine compiles it) may have its match looked for in windows cut at white space. */
export function edgesReadAsSpace(source: string): boolean {
  const rest = source.replace(EDGE_AS_SPACE, '').replace(/\\./g, '').replace(/\[[^\]]*\]/g, '');
  return !/[$^]/.test(rest);
}

/** Extraction windows in short texts: about this long, each starting half way into the one before. */
const WINDOW = 64;
/** Extracting a capture is far slower than testing, so in a long text it runs on a chunk this long… */
const CHUNK = 1024;
/** …each overlapping the next by this much, and the first starting this far before the first hint. */
const OVERLAP = 256;

/**
 * Text of a match of `pattern`, already known to match `text`; `hint` is where its first hint literal
 * is (0 without hints). Null only when the engine finds no match after all.
 */
export function matchedText(pattern: CompiledPattern, text: string, hint: number, windowed: boolean): string | null {
  return (windowed && text.length <= CHUNK + OVERLAP ? matchInWindows(pattern, text, hint) : null) ?? matchInChunks(pattern, text, hint);
}

/**
 * A match costs more to extract the longer the text, so in a short text it is looked for in windows
 * cut at white space, from the first hint literal on: the first window holding one gives it. Null when
 * none does, e.g. a match longer than a window.
 */
function matchInWindows(pattern: CompiledPattern, text: string, hint: number): string | null {
  let start = hint;
  while (start > 0 && !isSpace(text.charCodeAt(start - 1))) start -= 1;
  for (;;) {
    const end = spaceAtOrAfter(text, start + WINDOW);
    if (start === 0 && end === text.length) return null;
    const match = pattern.firstMatch(text.slice(start, end));
    if (match !== null) return match;
    if (end === text.length) return null;
    start = spaceAtOrAfter(text, start + WINDOW / 2) + 1;
  }
}

function spaceAtOrAfter(text: string, at: number): number {
  let i = Math.min(at, text.length);
  while (i < text.length && !isSpace(text.charCodeAt(i))) i += 1;
  return i;
}

/** The only white space left in the matching form. */
function isSpace(code: number): boolean {
  return code === 32 || code === 10;
}

const WHITE_SPACE = /\s/;

/** What `\s` matches, without a regex call for ASCII. */
function isWhiteSpace(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  if (code < 128) return code === 32 || (code >= 9 && code <= 13);
  return WHITE_SPACE.test(text.charAt(at));
}

/** The nearest white space at or before `at`, so a chunk never starts inside a word. */
function wordStart(text: string, at: number): number {
  for (let i = at; i > 0 && i > at - OVERLAP; i -= 1) if (isWhiteSpace(text, i - 1)) return i;
  return Math.max(0, at);
}

/**
 * In a long text, the first chunk (from near the first hint literal, cut at white space) holding a
 * match gives it; a short text, or a long one where no chunk does, is searched whole.
 */
function matchInChunks(pattern: CompiledPattern, text: string, hint: number): string | null {
  if (text.length > CHUNK + OVERLAP) {
    for (let start = wordStart(text, Math.max(0, hint - OVERLAP)); start < text.length; start = wordStart(text, start + CHUNK)) {
      const match = pattern.firstMatch(text.slice(start, start + CHUNK + OVERLAP));
      if (match !== null) return match;
      if (start + CHUNK + OVERLAP >= text.length) break;
    }
  }
  return pattern.firstMatch(text);
}
