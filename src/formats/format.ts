export const FORMATS = ['openai-chat', 'anthropic', 'openai-responses'] as const;
export type FormatName = (typeof FORMATS)[number];

/** How the route's prompt combines with the client's own system prompt. */
export const STRATEGIES = ['replace', 'prepend', 'append'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export type JsonObject = Record<string, unknown>;

/** One chat API's request shape: where the human speaks and where the system prompt lives. */
export interface ChatFormat {
  readonly name: FormatName;
  /**
   * Text of the latest human turn (tool results and assistant turns skipped), or null when there is none.
   * A turn of many content parts is read at most `limit` characters deep, half from each end (see
   * humanTextLimit); a single string is returned whole, since nothing need be copied to read it.
   */
  latestHumanText(body: JsonObject, limit?: number): string | null;
  /**
   * A copy of `body` carrying exactly one system prompt: `prompt` combined with the client's own by
   * `strategy`. Any of `ownPrompts` already in the client's prompt (a second router in front) is removed
   * first, so the swap never duplicates a prompt of ours.
   */
  withSystemPrompt(body: JsonObject, prompt: string, strategy: Strategy, ownPrompts: readonly string[]): JsonObject;
  /** Whether the body asks for a streamed answer. */
  isStream(body: JsonObject): boolean;
}

/**
 * How many characters of a human turn's text parts are worth collecting for a classifier with this scan
 * budget. It reads at most the budget, half from each end, and to fill a half it reads up to 8 raw
 * characters per character it keeps (invisible characters and marks take no budget): text cut to 8
 * budgets, half from each end, classifies exactly as the whole. Task keys read 16 Ki at most.
 */
export function humanTextLimit(scanBudget: number): number {
  return 8 * Math.max(scanBudget, 16 * 1024);
}

/** The limit for the default scan budget (16 Ki characters). */
export const DEFAULT_HUMAN_TEXT_LIMIT = humanTextLimit(16 * 1024);

/** A content part: an object with a string `type`; text parts carry `text`. */
export interface Part {
  readonly type: string;
  readonly text?: unknown;
  readonly [key: string]: unknown;
}

const isPart = (value: unknown): value is Part => isObject(value) && typeof value.type === 'string';

/**
 * Joins the text of the parts whose type is in `textTypes`; other parts (images, files, audio) are
 * ignored. A turn can hold hundreds of thousands of parts, and this runs on the request path: parts are
 * collected from the start until half of `limit` characters are held and from the end likewise, so the
 * work and the string built stay bounded while the text's head and tail, all the classifier reads,
 * are kept. Plain type checks, not a schema: this loop may run once per part of a huge array.
 */
export function partsText(content: unknown, textTypes: readonly string[], limit = DEFAULT_HUMAN_TEXT_LIMIT): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const textOf = (item: unknown): string | null =>
    isPart(item) && typeof item.text === 'string' && textTypes.includes(item.type) ? item.text : null;
  const half = Math.ceil(limit / 2);
  const head: string[] = [];
  let held = 0;
  let next = 0;
  for (; next < content.length && held < half; next += 1) {
    const text = textOf(content[next]);
    if (text === null) continue;
    head.push(text);
    held += text.length + 1;
  }
  const tail: string[] = [];
  held = 0;
  for (let index = content.length - 1; index >= next && held < half; index -= 1) {
    const text = textOf(content[index]);
    if (text === null) continue;
    tail.push(text);
    held += text.length + 1;
  }
  const texts = tail.length > 0 ? head.concat(tail.reverse()) : head;
  return texts.length > 0 ? texts.join('\n') : null;
}

/**
 * Text of the last `user` message that has some, from its parts of `textTypes`: turns of tool results
 * alone (no text part) are the agent loop talking, not the human, and are skipped.
 */
export function latestUserText(messages: unknown, textTypes: readonly string[], limit = DEFAULT_HUMAN_TEXT_LIMIT): string | null {
  if (!Array.isArray(messages)) return null;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message: unknown = messages[index];
    if (!isObject(message) || message.role !== 'user') continue;
    const text = partsText(message.content, textTypes, limit);
    if (text !== null && text.trim() !== '') return text;
  }
  return null;
}

/**
 * Where the gap before a prompt of ours starts: the spaces on its line, and up to two line breaks (one
 * blank line) before them. Scanned by hand from the end: an end-anchored regex retries from every
 * position of a long run of spaces.
 */
function gapBeforeStart(text: string): number {
  let at = text.length;
  while (at > 0 && (text[at - 1] === ' ' || text[at - 1] === '\t')) at -= 1;
  for (let breaks = 0; breaks < 2 && text[at - 1] === '\n'; breaks += 1) {
    at -= 1;
    if (text[at - 1] === '\r') at -= 1;
  }
  return at;
}

/** Where the gap after a prompt of ours ends: the spaces left on its line and up to two line breaks. */
function gapAfterEnd(text: string): number {
  let at = 0;
  while (at < text.length && (text[at] === ' ' || text[at] === '\t')) at += 1;
  for (let breaks = 0; breaks < 2; breaks += 1) {
    if (text[at] === '\n') at += 1;
    else if (text[at] === '\r' && text[at + 1] === '\n') at += 2;
    else break;
  }
  return at;
}

/**
 * Removes every copy of our own prompts from a client prompt, and the gap each one leaves: the
 * separator on either side of it (one blank line at most, as composeText writes), so a prompt of ours
 * at the start or end leaves nothing and one in the middle leaves a single separator. A client prompt
 * holding none of ours comes back as it is, byte for byte: its blank lines and leading or trailing
 * whitespace can matter (a few-shot layout, a code sample), and they are the client's to choose.
 */
export function stripOwnPrompts(text: string, ownPrompts: readonly string[]): string {
  let out = text;
  for (const own of ownPrompts) {
    if (!own || !out.includes(own)) continue;
    const pieces = out.split(own);
    out = pieces[0] ?? '';
    for (let index = 1; index < pieces.length; index += 1) {
      const piece = pieces[index] ?? '';
      const leftEnd = gapBeforeStart(out);
      const rightStart = gapAfterEnd(piece);
      const left = out.slice(0, leftEnd);
      const right = piece.slice(rightStart);
      const gapBefore = out.slice(leftEnd);
      const gapAfter = piece.slice(0, rightStart);
      // At either end the gap goes with the prompt; between two texts of the client one separator stays.
      const gap = left === '' || right === '' ? '' : gapBefore.length >= gapAfter.length ? gapBefore : gapAfter;
      out = left + gap + right;
    }
  }
  return out;
}

/** Our prompt and the client's, in the strategy's order, separated by a blank line. */
export function composeText(prompt: string, client: string, strategy: Strategy): string {
  if (strategy === 'replace' || client === '') return prompt;
  return strategy === 'prepend' ? `${prompt}\n\n${client}` : `${client}\n\n${prompt}`;
}

/** Orders our part and the client's parts by strategy. */
export function composeParts<T>(ours: T, client: readonly T[], strategy: Strategy): T[] {
  if (strategy === 'replace') return [ours];
  return strategy === 'prepend' ? [ours, ...client] : [...client, ours];
}

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
