import { z } from 'zod';

export const FORMATS = ['openai-chat', 'anthropic', 'openai-responses'] as const;
export type FormatName = (typeof FORMATS)[number];

/** How the route's prompt combines with the client's own system prompt. */
export const STRATEGIES = ['replace', 'prepend', 'append'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export type JsonObject = Record<string, unknown>;

/** One chat API's request shape: where the human speaks and where the system prompt lives. */
export interface ChatFormat {
  readonly name: FormatName;
  /** Text of the latest human turn (tool results and assistant turns skipped), or null when there is none. */
  latestHumanText(body: JsonObject): string | null;
  /**
   * A copy of `body` carrying exactly one system prompt: `prompt` combined with the client's own by
   * `strategy`. Any of `ownPrompts` already in the client's prompt (a second router in front) is removed
   * first, so the swap never duplicates a prompt of ours.
   */
  withSystemPrompt(body: JsonObject, prompt: string, strategy: Strategy, ownPrompts: readonly string[]): JsonObject;
  /** Whether the body asks for a streamed answer. */
  isStream(body: JsonObject): boolean;
}

const Part = z.looseObject({ type: z.string(), text: z.unknown().optional() });
export type Part = z.infer<typeof Part>;
const Content = z.union([z.string(), z.array(z.unknown())]);

/** Joins the text of the parts whose type is in `textTypes`; other parts (images, files, audio) are ignored. */
export function partsText(content: unknown, textTypes: readonly string[]): string | null {
  const parsed = Content.safeParse(content);
  if (!parsed.success) return null;
  if (typeof parsed.data === 'string') return parsed.data;
  const texts: string[] = [];
  for (const item of parsed.data) {
    const part = Part.safeParse(item);
    if (part.success && textTypes.includes(part.data.type) && typeof part.data.text === 'string') texts.push(part.data.text);
  }
  return texts.length > 0 ? texts.join('\n') : null;
}

/**
 * Text of the last `user` message that has some, from its parts of `textTypes`: turns of tool results
 * alone (no text part) are the agent loop talking, not the human, and are skipped.
 */
export function latestUserText(messages: unknown, textTypes: readonly string[]): string | null {
  if (!Array.isArray(messages)) return null;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message: unknown = messages[index];
    if (!isObject(message) || message.role !== 'user') continue;
    const text = partsText(message.content, textTypes);
    if (text !== null && text.trim() !== '') return text;
  }
  return null;
}

/** Removes every copy of our own prompts from a client prompt, and the blank lines left around them. */
export function stripOwnPrompts(text: string, ownPrompts: readonly string[]): string {
  let out = text;
  for (const own of ownPrompts) if (own && out.includes(own)) out = out.split(own).join('');
  return out.replace(/\n{3,}/g, '\n\n').trim();
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
