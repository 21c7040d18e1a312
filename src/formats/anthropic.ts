import { composeParts, composeText, isObject, latestUserText, stripOwnPrompts, type ChatFormat, type JsonObject } from './format.js';

/** Anthropic messages: top-level `system` (string or text blocks), `messages` of content blocks. */
export const anthropic: ChatFormat = {
  name: 'anthropic',

  // A user turn of tool_result blocks alone has no text part, so it is skipped.
  latestHumanText: (body, limit) => latestUserText(body.messages, ['text'], limit),

  withSystemPrompt(body, prompt, strategy, ownPrompts) {
    const system = body.system;
    if (!Array.isArray(system)) {
      const client = typeof system === 'string' ? stripOwnPrompts(system, ownPrompts) : '';
      return { ...body, system: composeText(prompt, client, strategy) };
    }
    const blocks = system.filter(isObject).flatMap((block) => {
      if (block.type !== 'text' || typeof block.text !== 'string') return [block];
      const text = stripOwnPrompts(block.text, ownPrompts);
      return text === '' ? [] : [{ ...block, text }];
    });
    const ours: JsonObject = { type: 'text', text: prompt };
    if (strategy === 'replace') {
      // The client's blocks go, but its cache breakpoint stays: our block is byte-stable per route. The
      // marker may sit on a block of ours already (a second pass), so it is looked for before stripping.
      const marker = [...system].reverse().find((block) => isObject(block) && block.cache_control !== undefined) as JsonObject | undefined;
      if (marker !== undefined) ours.cache_control = marker.cache_control;
    }
    return { ...body, system: composeParts(ours, blocks, strategy) };
  },

  isStream: (body) => body.stream === true,
};
