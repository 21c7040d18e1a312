import { z } from 'zod';
import { CATEGORIES } from './categories.js';
import { CONFIDENCES, MODES, STAKES, STEPS } from './decision.js';
import { FAILURE_TRIGGERS, FAILURE_VERDICTS } from './failure-policy.js';
import { FORMATS } from './formats/index.js';
import { ROUTES, type Route } from './route.js';

/** One line of decisions/YYYY-MM-DD.jsonl. Versioned: readers check `v` (2 added the scorer's fields). */
export const DecisionRecordSchema = z
  .object({
    v: z.literal(2),
    id: z.uuid(),
    /** The request's correlation id: the client's x-request-id (sanitised, at most 128 characters) or one generated. */
    requestId: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/).optional(),
    /** ISO 8601 with the offset written, e.g. 2026-11-22T13:26:05.120+00:00. */
    time: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}$/),
    mode: z.enum(MODES),
    /** The mode the rules chose, before any override. */
    classified: z.enum(MODES),
    trivial: z.boolean(),
    confidence: z.enum(CONFIDENCES),
    triggers: z.array(z.object({ rule: z.string(), category: z.enum([...CATEGORIES, 'trivial']) }).strict()),
    step: z.enum(STEPS),
    /** With step `context`: the turn the route followed (offer, previous) or decline. */
    followed: z.enum(['offer', 'previous', 'decline']).optional(),
    /** The scorer's calibrated probability of ACTION, whether it fell in the unsure band, and the id of the weights. */
    score: z.number().min(0).max(1),
    unsure: z.boolean(),
    scorer: z.string().nullable(),
    /** For an unsure decision under hard routing: the policy applied and, for tiebreak, how the call ended. */
    unsurePolicy: z.enum(['soft', 'answer', 'action', 'tiebreak']).nullable(),
    tiebreak: z.enum(['answer', 'action', 'cached', 'timeout', 'error', 'invalid']).nullable(),
    route: z.enum(ROUTES),
    /** true: hard routing applied the route; false: soft routing, the decision is shadow. */
    enforced: z.boolean(),
    override: z.enum(MODES).nullable(),
    debate: z.object({ verdict: z.string(), stakes: z.enum(STAKES) }).strict(),
    /** The failure debate or escalation this request carried for its session; absent when none did. */
    failure: z.object({ verdict: z.enum(FAILURE_VERDICTS), trigger: z.enum(FAILURE_TRIGGERS), task: z.string(), stakes: z.enum(STAKES) }).strict().optional(),
    format: z.enum(FORMATS),
    stream: z.boolean(),
    configHash: z.string(),
    /** The agent scaffolding (tags or line names of the wrapper list) removed before classifying; absent when none was. */
    stripped: z.array(z.string().min(1).max(64)).max(64).optional(),
    /** SHA-256 of the classified text, hex. */
    textSha256: z.string().regex(/^[0-9a-f]{64}$/),
    /** First characters of the text with secrets redacted; null when previews are off. */
    preview: z.string().max(50).nullable(),
    micros: z.number().nonnegative().nullable(),
  })
  .strict();

export type DecisionRecord = z.infer<typeof DecisionRecordSchema>;

const ROUTED_TO: Readonly<Record<Route, string>> = {
  answer: 'Direct Response',
  action: 'Swarm Orchestrator',
  tool_specialist: 'Tool Specialist (fast path)',
  soft_router: 'Soft Router (the LLM decides)',
};

/**
 * The daily memory log entry for a decision, in the routing log's format:
 *
 *     13:26 ROUTE "fix the E2E tests in zbooks repo" → ACTION
 *       Triggers: [fix, tests, repo]
 *       Confidence: STRONG (3 triggers)
 *       Routed to: Swarm Orchestrator
 */
export function memoryEntry(record: DecisionRecord, clock: string, matches: readonly string[]): string {
  const subject = record.preview === null ? `[${record.id}]` : JSON.stringify(record.preview);
  const lines = [`${clock} ROUTE ${subject} → ${record.mode}`, `  Triggers: [${matches.join(', ')}]`];
  if (record.step === 'question') lines.push('  Pattern: Question + no external refs');
  else if (record.step === 'default') lines.push('  Pattern: No trigger (default)');
  else lines.push(`  Confidence: ${record.confidence} (${record.triggers.length} trigger${record.triggers.length === 1 ? '' : 's'})`);
  if (record.step === 'scorer' || record.unsure) lines.push(`  Score: ${record.score.toFixed(2)}${record.unsure ? ` (unsure: ${record.unsurePolicy ?? 'shadow'}${record.tiebreak ? `, tie-breaker ${record.tiebreak}` : ''})` : ''}`);
  if (record.followed) lines.push(`  Context: followed ${record.followed}`);
  if (record.override) lines.push(`  Override: ${record.override} (rules chose ${record.classified})`);
  if (record.debate.verdict !== 'NONE') lines.push(`  Debate: ${record.debate.verdict} (stakes ${record.debate.stakes})`);
  if (record.failure) lines.push(`  Debate: ${record.failure.verdict} (${record.failure.trigger.replaceAll('_', ' ')})`);
  lines.push(`  Routed to: ${ROUTED_TO[record.route]}${record.enforced ? '' : ` (shadow: ${record.mode})`}`);
  return `${lines.join('\n')}\n\n`;
}
