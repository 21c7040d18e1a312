/**
 * Bounds the work per message: a text longer than `budget` UTF-16 units is read at its head and its
 * tail, half the budget each, so a trigger at either end of a huge paste is still seen.
 */
export interface ScanWindow {
  readonly text: string;
  readonly length: number;
  readonly scanned: number;
  readonly truncated: boolean;
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

const WHITESPACE = /\s/;
/** How far a cut may move to land on white space instead of inside a word. */
const SEAM_SEARCH = 256;

export function scanWindow(text: string, budget: number): ScanWindow {
  if (text.length <= budget) return { text, length: text.length, scanned: text.length, truncated: false };
  const half = Math.floor(budget / 2);
  // Cut at white space where there is some nearby: half a word ("la|test") must not read as a trigger.
  let headEnd = half;
  for (let at = half; at > half - SEAM_SEARCH && at > 0; at -= 1) {
    if (WHITESPACE.test(text.charAt(at))) {
      headEnd = at;
      break;
    }
  }
  if (isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd -= 1;
  const tailFrom = text.length - half;
  let tailStart = tailFrom;
  for (let at = tailFrom; at < tailFrom + SEAM_SEARCH && at < text.length; at += 1) {
    if (WHITESPACE.test(text.charAt(at - 1))) {
      tailStart = at;
      break;
    }
  }
  if (isLowSurrogate(text.charCodeAt(tailStart))) tailStart += 1;
  // A line break between the two halves keeps a word cut at the seam from joining another.
  const window = `${text.slice(0, headEnd)}\n${text.slice(tailStart)}`;
  return { text: window, length: text.length, scanned: headEnd + (text.length - tailStart), truncated: true };
}

/** How many raw characters one end may read to fill its half of the budget: invisible characters and marks take no budget, but reading them does take time. */
const RAW_READ_FACTOR = 8;
/** Raw characters cleaned in the first piece at each end; each further piece doubles. */
const FIRST_PIECE = 1024;

/** A raw cut point that splits neither a surrogate pair nor a CRLF (cleaned apart, it would be two line breaks). */
function safeCut(text: string, at: number): number {
  const code = text.charCodeAt(at);
  return isLowSurrogate(code) || (code === 10 && text.charCodeAt(at - 1) === 13) ? at - 1 : at;
}

/**
 * The text the rules read: `clean` (character-local, see cleanCharacters) applied first and the budget
 * applied to what it gives, then `join` over the result. So a character that vanishes (zero-width,
 * marks) uses no budget, and one that expands (U+FDFA is 18 letters in NFKC) cannot multiply it. Each
 * end is cleaned in growing pieces until it holds half the budget, meets the other end, or has read
 * RAW_READ_FACTOR times half the budget in raw characters.
 */
export function readWindow(text: string, budget: number, clean: (part: string) => string, join: (cleaned: string) => string): ScanWindow {
  const half = Math.floor(budget / 2);
  const rawPerEnd = half * RAW_READ_FACTOR;
  let head = '';
  let headRaw = 0;
  for (let piece = FIRST_PIECE; head.length < half && headRaw < text.length && headRaw < rawPerEnd; piece *= 2) {
    const end = safeCut(text, Math.min(headRaw + piece, text.length));
    head += clean(text.slice(headRaw, end));
    headRaw = end;
  }
  let tail = '';
  let tailRaw = text.length;
  for (let piece = FIRST_PIECE; tail.length < half && tailRaw > headRaw && text.length - tailRaw < rawPerEnd; piece *= 2) {
    const start = safeCut(text, Math.max(tailRaw - piece, headRaw));
    tail = clean(text.slice(start, tailRaw)) + tail;
    tailRaw = start;
  }
  const whole = tailRaw <= headRaw;
  const window = scanWindow(whole ? join(head + tail) : `${join(head)}\n${join(tail)}`, budget);
  return { text: window.text, length: text.length, scanned: window.scanned, truncated: !whole || window.truncated };
}
