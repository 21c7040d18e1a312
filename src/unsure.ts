import type { Mode } from './decision.js';

/** What an unsure decision does under hard routing (routing.onUnsure). */
export const UNSURE_POLICIES = ['soft', 'answer', 'action', 'tiebreak'] as const;
export type UnsurePolicy = (typeof UNSURE_POLICIES)[number];

/** How a tie-breaker call ended: a verdict (fresh or cached), or why there is none. */
export const TIEBREAK_RESULTS = ['answer', 'action', 'cached', 'timeout', 'error', 'invalid'] as const;
export type TiebreakResult = (typeof TIEBREAK_RESULTS)[number];

export interface TiebreakVerdict {
  /** null: no verdict; the caller falls back to soft routing. */
  readonly mode: Mode | null;
  readonly result: TiebreakResult;
  readonly seconds: number;
}

/** A second opinion for unsure decisions; it never throws and keeps its own time limit. */
export interface Tiebreaker {
  decide(text: string): Promise<TiebreakVerdict>;
}
