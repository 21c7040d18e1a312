import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { CHAT_FORMATS, DEFAULT_WRAPPERS, readHumanTurns, routeOf, settleUnsure, stripWrappers, type Turns } from '../src/index.js';
import { jsonBodyOfAnyType } from '../middleware/json-body.js';
import { jsonKind, ownEndpointErrors, sendRouterError } from '../middleware/errors.js';
import type { RoutingSnapshot } from '../middleware/task-router.js';

/** How a POST /router/classify request ended: a closed set, for the metric. */
export const CLASSIFY_RESULTS = ['answer', 'action', 'no_human_text', 'invalid'] as const;
export type ClassifyResult = (typeof CLASSIFY_RESULTS)[number];

/**
 * What /router/classify accepts: `{"text"}`, or a chat body of any of the three APIs (`messages` for
 * OpenAI chat and Anthropic, `input` for OpenAI responses). Other fields (model, tools, …) are allowed
 * and ignored, so a request meant for the upstream can be sent as it is.
 */
const ClassifyBodySchema = z.union(
  [
    z.looseObject({ text: z.string().min(1, 'text is empty: send the message to classify') }),
    z.looseObject({ messages: z.array(z.unknown()) }),
    z.looseObject({ input: z.union([z.string(), z.array(z.unknown())]) }),
  ],
  { error: 'expected {"text": "…"}, or a chat body with "messages" (OpenAI chat, Anthropic) or "input" (OpenAI responses)' },
);

/** The turns of a `{"text"}` body or a chat body, read as the chat routes read them (see humanTurns). */
function turnsFrom(body: z.infer<typeof ClassifyBodySchema>, snapshot: RoutingSnapshot): { turns: Turns; stripped: readonly string[] } | null {
  if ('text' in body && typeof body.text === 'string') {
    const wrappers = snapshot.wrappers ?? DEFAULT_WRAPPERS;
    const result = stripWrappers(body.text, wrappers);
    // Blanks alone are no human text: a chat route skips a user turn of them (see latestUserText) and
    // forwards the request with no decision, so this endpoint must not answer one for them.
    return result.text.trim() === '' ? null : { turns: { latest: result.text, previous: null, assistant: null }, stripped: result.stripped };
  }
  // OpenAI chat and Anthropic read a user turn's text parts alike; `input` is OpenAI responses.
  return readHumanTurns(snapshot, 'messages' in body ? CHAT_FORMATS['openai-chat'] : CHAT_FORMATS['openai-responses'], body);
}

/**
 * POST /router/classify: the decision the gateway would make for a body, as JSON, without calling the
 * upstream, rewriting anything or writing a decision record. For dashboards, agents that pick a tool
 * themselves, and checking a rule change against live traffic shapes.
 */
export function classifyRouter(snapshotOf: () => RoutingSnapshot, counted: (result: ClassifyResult) => void = () => {}, bodyBytes = 10 * 1024 * 1024): Router {
  const router = express.Router();
  // The chat routes' body reader: the same charsets, encodings and limit as the body sent upstream.
  router.post('/router/classify', jsonBodyOfAnyType(bodyBytes), (req: Request, res: Response) => {
    const body: unknown = req.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      counted('invalid');
      return sendRouterError(res, 400, `request body must be a JSON object ({"text": "…"} or a chat body), got ${body === undefined ? 'no body' : jsonKind(body)}`);
    }
    const parsed = ClassifyBodySchema.safeParse(body);
    if (!parsed.success) {
      counted('invalid');
      return sendRouterError(res, 400, 'nothing to classify', parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`));
    }
    const snapshot = snapshotOf();
    const read = turnsFrom(parsed.data, snapshot);
    if (read === null) {
      counted('no_human_text');
      return sendRouterError(res, 422, 'the body has no human text to classify (only tool results, assistant turns, empty text or agent scaffolding); a chat route would forward it with no decision');
    }
    // Settled as a chat route settles it, routing.onUnsure included; a tie-breaker is not called here.
    const { applied, hard, unsurePolicy } = settleUnsure(snapshot, snapshot.classifier.classifyTurns(read.turns), null);
    counted(applied.mode === 'ACTION' ? 'action' : 'answer');
    res.json(Object.assign({}, applied, {
      route: routeOf(applied, hard),
      routing: hard ? 'hard' : 'soft',
      unsurePolicy,
      stripped: read.stripped,
      configHash: snapshot.configHash,
    }));
  });
  router.use('/router/classify', ownEndpointErrors('send the chat body you would send upstream'));
  return router;
}
