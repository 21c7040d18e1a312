import { composeParts, composeText, isObject, latestUserText, stripOwnPrompts, type ChatFormat, type JsonObject } from './format.js';

const SYSTEM_ROLES = new Set(['system', 'developer']);

/** Client system/developer parts with our own prompts removed; empty parts dropped. */
function clientParts(messages: readonly JsonObject[], ownPrompts: readonly string[]): JsonObject[] {
  return messages.flatMap((message) => {
    const content = message.content;
    const parts = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content.filter(isObject) : [];
    return parts.flatMap((part) => {
      if (part.type !== 'text' || typeof part.text !== 'string') return [part];
      const text = stripOwnPrompts(part.text, ownPrompts);
      return text === '' ? [] : [{ ...part, text }];
    });
  });
}

/** OpenAI chat completions: `messages` with roles system/developer/user/assistant/tool. */
export const openaiChat: ChatFormat = {
  name: 'openai-chat',

  // Tool results come as `tool` messages, so the last user message with text is the human's.
  latestHumanText: (body, limit) => latestUserText(body.messages, ['text', 'input_text'], limit),

  withSystemPrompt(body, prompt, strategy, ownPrompts) {
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const system = messages.filter((message): message is JsonObject => isObject(message) && SYSTEM_ROLES.has(String(message.role)));
    const rest = messages.filter((message) => !(isObject(message) && SYSTEM_ROLES.has(String(message.role))));
    // Keep the client's role and form: `developer` if it used it, parts if it sent parts.
    const role = system.some((message) => message.role === 'developer') ? 'developer' : 'system';
    const parts = clientParts(system, ownPrompts);
    const content = system.some((message) => Array.isArray(message.content))
      ? composeParts<JsonObject>({ type: 'text', text: prompt }, parts, strategy)
      : composeText(prompt, parts.map((part) => (typeof part.text === 'string' ? part.text : '')).filter(Boolean).join('\n\n'), strategy);
    return { ...body, messages: [{ role, content }, ...rest] };
  },

  isStream: (body) => body.stream === true,
};
