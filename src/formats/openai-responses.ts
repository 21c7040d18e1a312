import { composeText, isObject, partsText, stripOwnPrompts, type ChatFormat, type JsonObject } from './format.js';

/** A message item of `input` with the system or developer role. */
const isSystemItem = (item: unknown): item is JsonObject =>
  isObject(item) && (item.role === 'system' || item.role === 'developer') && (item.type === undefined || item.type === 'message');

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
  // system and developer messages are in chat: all of it goes into `instructions`, by strategy, so
  // under replace the model sees ours alone.
  withSystemPrompt(body, prompt, strategy, ownPrompts) {
    const input = Array.isArray(body.input) ? body.input : null;
    const system = input?.filter(isSystemItem) ?? [];
    const texts = [typeof body.instructions === 'string' ? body.instructions : '', ...system.map((item) => partsText(item.content, ['input_text', 'text']) ?? '')];
    const client = texts.map((text) => stripOwnPrompts(text, ownPrompts)).filter((text) => text !== '').join('\n\n');
    const instructions = composeText(prompt, client, strategy);
    return system.length === 0 ? { ...body, instructions } : { ...body, instructions, input: input?.filter((item) => !isSystemItem(item)) };
  },

  isStream: (body) => body.stream === true,
};
