import { z } from 'zod';
import { CATEGORIES } from './categories.js';

export const MODES = ['ANSWER', 'ACTION'] as const;
export const CONFIDENCES = ['STRONG', 'WEAK', 'NONE'] as const;
/**
 * The step of the contract that decided: trivial fast path, question precedence, ACTION triggers, the
 * scorer (it overturned what the rules said), the conversation (a follow-up took the route of the turn
 * it continues), the default, or an override.
 */
export const STEPS = ['fast_path', 'question', 'triggers', 'scorer', 'context', 'default', 'override'] as const;
export const STAKES = ['none', 'medium', 'high'] as const;
export const BYPASSES = ['read_only', 'trivial', 'confirmed'] as const;

export const TriggerSchema = z.object({
  rule: z.string(),
  category: z.enum([...CATEGORIES, 'trivial']),
  match: z.string(),
});

export const DecisionSchema = z.object({
  mode: z.enum(MODES),
  /** The tool-specialist fast path: the whole message is one trivial command. Always mode ACTION. */
  trivial: z.boolean(),
  confidence: z.enum(CONFIDENCES),
  /** Distinct ACTION triggers found, one per rule, in rule-set order. */
  triggers: z.array(TriggerSchema),
  step: z.enum(STEPS),
  /** Whether a planning debate should precede execution, and why. */
  debate: z.object({
    verdict: z.enum(['DEBATE_PLANNING', 'NONE']),
    stakes: z.enum(STAKES),
    reasons: z.array(TriggerSchema),
    bypass: z.enum(BYPASSES).nullable(),
  }),
  /** How much of the message was read: huge messages are read at both ends up to the scan budget. */
  scan: z.object({
    length: z.number().int().nonnegative(),
    scanned: z.number().int().nonnegative(),
    truncated: z.boolean(),
  }),
  engine: z.string(),
  /** Calibrated probability of ACTION from the scorer (1 or 0 when the rules alone decided). */
  score: z.number().min(0).max(1),
  /** The score fell inside the scorer's unsure band: `mode` is the forced choice. */
  unsure: z.boolean(),
  /** Id of the scorer weights that scored it; null when the rules alone decided. */
  scorer: z.string().nullable(),
  /** The features that moved the score most, strongest first (positive pulls towards ACTION). */
  features: z.array(z.object({ feature: z.string(), weight: z.number() })),
  /** With step `context`: the turn the route came from (the assistant's offer, the previous human turn) or a decline. */
  followed: z.enum(['offer', 'previous', 'decline']).optional(),
  /** Classification time, present when the classifier was given a clock. */
  micros: z.number().nonnegative().optional(),
});

export type Trigger = z.infer<typeof TriggerSchema>;
export type Decision = z.infer<typeof DecisionSchema>;
export type Mode = Decision['mode'];
export type Confidence = Decision['confidence'];
export type Step = Decision['step'];
export type Debate = Decision['debate'];
