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
