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

export function scanWindow(text: string, budget: number): ScanWindow {
  if (text.length <= budget) return { text, length: text.length, scanned: text.length, truncated: false };
  const half = Math.floor(budget / 2);
  let headEnd = half;
  if (isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd -= 1;
  let tailStart = text.length - half;
  if (isLowSurrogate(text.charCodeAt(tailStart))) tailStart += 1;
  // A line break between the two halves keeps a word cut at the seam from joining another.
  const window = `${text.slice(0, headEnd)}\n${text.slice(tailStart)}`;
  return { text: window, length: text.length, scanned: headEnd + (text.length - tailStart), truncated: true };
}
