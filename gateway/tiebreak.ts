import { createHash } from 'node:crypto';
import type { Mode, Tiebreaker } from '../src/index.js';

/** One short classification call for an unsure decision, to an OpenAI-compatible chat completions endpoint. */
export interface TiebreakSettings {
  /** The endpoint's full URL, e.g. https://api.openai.com/v1/chat/completions. */
  readonly url: string;
  readonly model: string;
  /** Bearer key sent as Authorization; null sends none. */
  readonly apiKey: string | null;
  /** Hard limit on the whole call; past it the request goes on with soft routing. */
  readonly timeoutMs: number;
  /** Answers kept, by SHA-256 of the text (least recently used first out). */
  readonly cacheSize: number;
  /** The system prompt of the call: it must ask for one word, ANSWER or ACTION. */
  readonly prompt: string;
}

/** Characters of the message sent to the tie-breaker: its head and tail, where a request sits. */
const TEXT_LIMIT = 4000;
const VERDICT = /\b(ANSWER|ACTION)\b/i;
/**
 * Most bytes of an answer read. One of three tokens is a few hundred bytes; an endpoint that sends
 * more is broken, and read whole its answer could hold megabytes for up to timeoutMs per unsure request.
 */
const ANSWER_BYTES = 64 * 1024;

/**
 * The response's JSON, read no further than ANSWER_BYTES: past them the body is cancelled (leaving the
 * loop early does it) and the answer is a SyntaxError, no verdict.
 */
async function boundedJson(response: Response): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of response.body ?? []) {
    length += chunk.byteLength;
    if (length > ANSWER_BYTES) break;
    chunks.push(chunk);
  }
  if (length > ANSWER_BYTES) throw new SyntaxError(`the tie-breaker's answer is longer than ${ANSWER_BYTES} bytes`);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function excerpt(text: string): string {
  if (text.length <= TEXT_LIMIT) return text;
  const half = TEXT_LIMIT / 2;
  return `${text.slice(0, half)}\n…\n${text.slice(-half)}`;
}

/** The one word of a chat completions answer, if it is ANSWER or ACTION. */
function verdictOf(body: unknown): Mode | null {
  const choices = (body as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return null;
  const content = (choices[0] as { message?: { content?: unknown } } | undefined)?.message?.content;
  if (typeof content !== 'string') return null;
  const found = VERDICT.exec(content.trim().slice(0, 40));
  return found ? (found[1]?.toUpperCase() as Mode) : null;
}

/**
 * A bounded tie-breaker: every call has a hard timeout, any error or unusable answer gives no verdict
 * (never an exception), and verdicts are cached by text hash in a bounded LRU, so an agent loop that
 * resends the same turn asks once.
 */
export function createTiebreaker(settings: TiebreakSettings, now: () => number = () => performance.now()): Tiebreaker {
  const cache = new Map<string, Mode>();
  return {
    async decide(text) {
      const started = now();
      const seconds = () => (now() - started) / 1000;
      const key = createHash('sha256').update(text).digest('hex');
      const cached = cache.get(key);
      if (cached !== undefined) {
        cache.delete(key);
        cache.set(key, cached);
        return { mode: cached, result: 'cached', seconds: seconds() };
      }
      let body: unknown;
      try {
        const response = await fetch(settings.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}) },
          body: JSON.stringify({
            model: settings.model,
            temperature: 0,
            max_tokens: 3,
            messages: [{ role: 'system', content: settings.prompt }, { role: 'user', content: excerpt(text) }],
          }),
          signal: AbortSignal.timeout(settings.timeoutMs),
        });
        if (!response.ok) {
          await response.body?.cancel();
          return { mode: null, result: 'error', seconds: seconds() };
        }
        body = await boundedJson(response);
      } catch (error) {
        const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
        return { mode: null, result: timedOut ? 'timeout' : (error instanceof SyntaxError ? 'invalid' : 'error'), seconds: seconds() };
      }
      const mode = verdictOf(body);
      if (mode === null) return { mode: null, result: 'invalid', seconds: seconds() };
      cache.set(key, mode);
      if (cache.size > settings.cacheSize) cache.delete(cache.keys().next().value as string);
      return { mode, result: mode === 'ACTION' ? 'action' : 'answer', seconds: seconds() };
    },
  };
}
