import type { RequestHandler } from 'express';
import { formatForPath, type FormatName } from '../src/index.js';
import { sendError } from './errors.js';
import { fullPath } from './request-path.js';

export const DEFAULT_MAX_MESSAGES = 10_000;

/** Where each API keeps a request's turns: `input` for /responses, `messages` otherwise. */
const TURNS: Readonly<Record<FormatName, { readonly field: string; readonly noun: string }>> = {
  'openai-chat': { field: 'messages', noun: 'messages' },
  anthropic: { field: 'messages', noun: 'messages' },
  'openai-responses': { field: 'input', noun: 'input items' },
};

/**
 * Refuses chat requests carrying more than `maxMessages` turns with a 413 in the API's own shape. The
 * body limit bounds bytes; this bounds the per-turn work (finding the human turn, rebuilding the list)
 * and keeps a flood of tiny turns from riding under the byte limit.
 */
export function messageLimit(maxMessages: number): RequestHandler {
  return (req, res, next) => {
    const format = formatForPath(fullPath(req));
    const body: unknown = req.body;
    if (!format || typeof body !== 'object' || body === null || Array.isArray(body)) return next();
    const { field, noun } = TURNS[format.name];
    const turns: unknown = (body as Record<string, unknown>)[field];
    if (Array.isArray(turns) && turns.length > maxMessages) {
      return sendError(res, format.name, 'too_large', `request has ${turns.length} ${noun}; this gateway accepts at most ${maxMessages} per request (limits.maxMessages)`);
    }
    next();
  };
}
