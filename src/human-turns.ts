import type { Turns } from './context.js';
import { turnsOf } from './context.js';
import { DEFAULT_HUMAN_TEXT_LIMIT, humanTextLimit, type ChatFormat, type JsonObject } from './formats/format.js';
import { DEFAULT_WRAPPERS, stripWrappers, wrapperNames, type Wrapper } from './wrappers.js';

/** What the classifier reads from a chat body. */
export interface HumanTurns {
  /** The latest human turn's own words, agent scaffolding stripped. */
  readonly text: string;
  /** That turn and the turns before it that context reads. */
  readonly turns: Turns;
  /** The wrappers stripped, once each, in the wrapper list's order (a closed set for logs and labels). */
  readonly stripped: readonly string[];
}

export interface HumanTurnOptions {
  /** Agent scaffolding to strip; default the shipped list. */
  readonly wrappers?: readonly Wrapper[] | undefined;
  /** The classifier's scan budget, which bounds how much of a huge turn is collected; default 16 Ki. */
  readonly scanBudget?: number | undefined;
}

/** Most earlier user turns looked at when the latest one is all scaffolding (a Codex environment update, a slash-command echo). */
const MAX_SCAFFOLD_TURNS = 16;

/** The chat's messages (input items for /responses), or [] when it has none in a list. */
function messagesOf(body: JsonObject): unknown[] {
  return Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [];
}

/** Names reported as stripped, once each, in the wrapper list's order. */
function inListOrder(wrappers: readonly Wrapper[], names: readonly string[]): string[] {
  if (names.length === 0) return [];
  const found = new Set(names);
  return wrapperNames(wrappers).filter((name) => found.has(name));
}

/**
 * The latest human turn's own words: its text with agent scaffolding stripped. A turn that is nothing
 * but scaffolding is the agent speaking, so the user turn before it is read instead, a bounded number
 * of turns back; null when no human words are found.
 */
function latestHumanWords(format: ChatFormat, body: JsonObject, wrappers: readonly Wrapper[], limit: number): { text: string; stripped: readonly string[]; earlier: boolean } | null {
  const raw = format.latestHumanText(body, limit);
  if (raw === null) return null;
  const first = stripWrappers(raw, wrappers);
  if (first.text !== '') return { text: first.text, stripped: first.stripped, earlier: false };
  const stripped = new Set(first.stripped);
  const messages = messagesOf(body);
  const key = Array.isArray(body.messages) ? 'messages' : 'input';
  let seen = 0;
  let skippedLatest = false;
  for (let index = messages.length - 1; index >= 0 && seen < MAX_SCAFFOLD_TURNS; index -= 1) {
    // One message at a time through the format's own reader, so its idea of a human turn is kept.
    const text = format.latestHumanText({ ...body, [key]: [messages[index]] }, limit);
    if (text === null) continue;
    seen += 1;
    if (!skippedLatest) {
      skippedLatest = true;
      continue;
    }
    const result = stripWrappers(text, wrappers);
    for (const name of result.stripped) stripped.add(name);
    if (result.text !== '') return { text: result.text, stripped: inListOrder(wrappers, [...stripped]), earlier: true };
  }
  return null;
}

/**
 * What the classifier reads from a chat body: the latest human turn and the turns before it that context
 * reads, agent scaffolding stripped; null when the body has no words of the user.
 */
export function humanTurns(format: ChatFormat, body: JsonObject, options: HumanTurnOptions = {}): HumanTurns | null {
  const wrappers = options.wrappers ?? DEFAULT_WRAPPERS;
  const limit = options.scanBudget === undefined ? DEFAULT_HUMAN_TEXT_LIMIT : humanTextLimit(options.scanBudget);
  const human = latestHumanWords(format, body, wrappers, limit);
  if (human === null) return null;
  // Earlier turns of a turn found behind scaffolding are not the ones context would read: it goes alone.
  if (human.earlier) return { text: human.text, turns: { latest: human.text, previous: null, assistant: null }, stripped: inListOrder(wrappers, human.stripped) };
  const around = turnsOf(messagesOf(body) as { role?: unknown; content?: unknown }[]);
  const stripped = [...human.stripped];
  const clean = (text: string | null | undefined) => {
    if (text === null || text === undefined) return null;
    const result = stripWrappers(text, wrappers);
    stripped.push(...result.stripped);
    return result.text === '' ? null : result.text;
  };
  const turns = { latest: human.text, previous: clean(around?.previous), assistant: clean(around?.assistant) };
  return { text: human.text, turns, stripped: inListOrder(wrappers, stripped) };
}
