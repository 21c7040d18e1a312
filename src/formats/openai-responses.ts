import { composeText, isObject, partsText, stripOwnPrompts, type ChatFormat, type JsonObject } from './format.js';

/** A message item of `input` with the system or developer role. */
const isSystemItem = (item: unknown): item is JsonObject =>
  isObject(item) && (item.role === 'system' || item.role === 'developer') && (item.type === undefined || item.type === 'message');

const TEXT_TYPES: ReadonlySet<unknown> = new Set(['input_text', 'text']);
const isTextPart = (part: unknown): part is JsonObject & { text: string } => isObject(part) && TEXT_TYPES.has(part.type) && typeof part.text === 'string';

/**
 * The whole text of a system or developer item, or null when it holds anything else (an image, a
 * file, a part of a type we do not know): `instructions` is a string, so only text can move there.
 * Every part is read, however many: this is the client's prompt going upstream, not text the
 * classifier samples (partsText keeps only the ends of a long turn).
 */
function systemText(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || !content.every(isTextPart)) return null;
  return content.map((part) => part.text).join('\n');
}

/** A system item kept in `input`, with any prompt of ours taken out of its text parts (emptied ones dropped). */
function withoutOwnPrompts(item: JsonObject, ownPrompts: readonly string[]): JsonObject {
  if (!Array.isArray(item.content)) return item;
  const content = item.content.flatMap((part: unknown) => {
    if (!isTextPart(part)) return [part];
    const text = stripOwnPrompts(part.text, ownPrompts);
    return text === part.text ? [part] : text === '' ? [] : [{ ...part, text }];
  });
  return { ...item, content };
}

/** OpenAI responses: `instructions` is the system prompt, `input` a string or a list of items. */
export const openaiResponses: ChatFormat = {
  name: 'openai-responses',

  latestHumanText(body, limit) {
    const input = body.input;
    if (typeof input === 'string') return input.trim() === '' ? null : input;
    if (!Array.isArray(input)) return null;
    for (let index = input.length - 1; index >= 0; index -= 1) {
      const item: unknown = input[index];
      // Function calls, their outputs and reasoning items have a `type` other than message and no user role.
      if (!isObject(item) || item.role !== 'user' || (item.type !== undefined && item.type !== 'message')) continue;
      const text = partsText(item.content, ['input_text', 'text'], limit);
      if (text !== null && text.trim() !== '') return text;
    }
    return null;
  },

  // `instructions` and any system or developer message in `input` are the client's system prompt, as
  // system and developer messages are in chat: their text goes into `instructions`, by strategy, so
  // under replace the model sees ours alone. Under prepend and append a system item holding anything
  // but text (an image, a file) stays where it is in `input`, whole: `instructions` cannot carry it,
  // and taking its text away from its other parts would change what the client asked.
  withSystemPrompt(body, prompt, strategy, ownPrompts) {
    const input = Array.isArray(body.input) ? body.input : null;
    const system = input?.filter(isSystemItem) ?? [];
    const texts = [typeof body.instructions === 'string' ? body.instructions : ''];
    const kept = new Set<JsonObject>();
    for (const item of system) {
      const text = systemText(item.content);
      if (text !== null) texts.push(text);
      else if (strategy !== 'replace') kept.add(item);
    }
    const client = texts.map((text) => stripOwnPrompts(text, ownPrompts)).filter((text) => text !== '').join('\n\n');
    const instructions = composeText(prompt, client, strategy);
    if (system.length === 0) return { ...body, instructions };
    const rest = input?.flatMap((item) => (!isSystemItem(item) ? [item] : kept.has(item) ? [withoutOwnPrompts(item, ownPrompts)] : []));
    return { ...body, instructions, input: rest };
  },

  isStream: (body) => body.stream === true,
};
