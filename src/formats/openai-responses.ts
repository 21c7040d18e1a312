import { composeText, isObject, partsText, stripOwnPrompts, type ChatFormat } from './format.js';

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

  withSystemPrompt(body, prompt, strategy, ownPrompts) {
    const client = typeof body.instructions === 'string' ? stripOwnPrompts(body.instructions, ownPrompts) : '';
    return { ...body, instructions: composeText(prompt, client, strategy) };
  },

  isStream: (body) => body.stream === true,
};
