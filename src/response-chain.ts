/**
 * Responses API chains. A request that continues a stored response (`previous_response_id`) with tool
 * outputs only holds no human turn, and the upstream does not carry the first request's `instructions`
 * over to it: without a memory of how the chain was routed, every tool step of such an agent loop would
 * reach the model with no route prompt. The chain remembers, per response id, the classified request
 * that started it, so a continuation is routed as the request it continues (as a chat agent's tool steps
 * are, since they resend the same latest human turn).
 */
import type { Decision, Mode } from './decision.js';
import type { JsonObject } from './formats/format.js';
import type { HumanTurns } from './human-turns.js';

/** What a continuation is routed with: the classification of the human turn that started the chain. */
export interface ChainLink {
  readonly human: HumanTurns;
  /** The classifier's decision for that turn. */
  readonly classified: Decision;
  /** A tie-breaker's verdict on it, or null: a continuation does not ask again for one given. */
  readonly tiebreak: Mode | null;
}

export interface ResponseChainLimits {
  /** Most responses remembered, least recently used first out. */
  readonly entries: number;
  /** Most characters of human text held over all entries: bounds the memory, about 2 bytes a character. */
  readonly characters: number;
}

export interface ResponseChain {
  get(responseId: string): ChainLink | undefined;
  set(responseId: string, link: ChainLink): void;
  readonly size: number;
}

/** Longest response id read or remembered; OpenAI's are about 50 characters. */
const MAX_ID_LENGTH = 256;
const ID_CHARACTERS = /^[\w.:-]+$/;

/** The response a Responses body continues (`previous_response_id`), or null. */
export function previousResponseId(body: JsonObject): string | null {
  const id = body.previous_response_id;
  return typeof id === 'string' && id.length <= MAX_ID_LENGTH && ID_CHARACTERS.test(id) ? id : null;
}

/**
 * The response id in the first bytes of a Responses API response: the body of a response object, whose
 * `id` comes first, or a stream whose first event (`response.created`) carries it. Only ids shaped as
 * the API makes them (`resp_…`) count: output items have ids of their own (`msg_…`, `fc_…`).
 */
export function responseIdIn(head: string): string | null {
  const found = /"id"\s*:\s*"(resp[\w.:-]{1,252})"/.exec(head);
  return found ? (found[1] as string) : null;
}

/** A bounded memory of response ids and the links they continue. */
export function createResponseChain(limits: ResponseChainLimits): ResponseChain {
  const links = new Map<string, ChainLink>();
  let characters = 0;
  const weightOf = (link: ChainLink) => link.human.text.length;
  const forget = (id: string) => {
    const link = links.get(id);
    if (link === undefined) return;
    links.delete(id);
    characters -= weightOf(link);
  };
  return {
    get(responseId) {
      const link = links.get(responseId);
      if (link === undefined) return undefined;
      // A Map keeps insertion order: re-inserting makes its first key the least recently used.
      links.delete(responseId);
      links.set(responseId, link);
      return link;
    },
    set(responseId, link) {
      if (limits.entries <= 0 || responseId.length > MAX_ID_LENGTH || weightOf(link) > limits.characters) return;
      forget(responseId);
      links.set(responseId, link);
      characters += weightOf(link);
      for (const oldest of links.keys()) {
        if (links.size <= limits.entries && characters <= limits.characters) break;
        forget(oldest);
      }
    },
    get size() {
      return links.size;
    },
  };
}
