import { anthropic } from './anthropic.js';
import type { ChatFormat, FormatName } from './format.js';
import { openaiChat } from './openai-chat.js';
import { openaiResponses } from './openai-responses.js';

export const CHAT_FORMATS: Readonly<Record<FormatName, ChatFormat>> = {
  'openai-chat': openaiChat,
  anthropic,
  'openai-responses': openaiResponses,
};

/** OpenAI's Assistants API adds a message to a thread at /v1/threads/{id}/messages: no chat request. */
const THREAD_MESSAGES = /\/threads\/[^/]+\/messages$/i;

/** The chat format served at a request path, by its final segments; null for every other path. */
export function formatForPath(path: string): ChatFormat | null {
  const clean = path.split('?')[0]?.replace(/\/+$/, '') ?? '';
  if (clean.endsWith('/chat/completions')) return openaiChat;
  if (clean.endsWith('/messages')) return THREAD_MESSAGES.test(clean) ? null : anthropic;
  if (clean.endsWith('/responses')) return openaiResponses;
  return null;
}

export { FORMATS, STRATEGIES, type ChatFormat, type FormatName, type JsonObject, type Strategy } from './format.js';
