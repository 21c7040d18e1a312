/**
 * task-router's embeddable Express surface: the routing middleware and what it needs around it in an
 * existing app (body reading, limits, error shapes, the header protocol). The standalone gateway built
 * around it is `task-router/gateway`.
 */
export { taskRouter, decisionHeaders, debatesOf, HEADER, type RoutedDecision, type RoutingHooks, type RoutingSnapshot, type TaskRouterOptions } from './task-router.js';
export { jsonBody, bodyErrors, dropHopByHop } from './json-body.js';
export { finalErrorHandler } from './errors.js';
export { refuseAmbiguousPaths } from './paths.js';
export { messageLimit, DEFAULT_MAX_MESSAGES } from './limits.js';
export { loadPrompts, DEFAULT_PROMPTS_DIR } from './prompts.js';
export { MemorySessionStore, SessionTracker, SESSION_ID, type DecisionReport, type SessionSettings, type SessionStore } from './sessions.js';
export { forwardBody, restreamBody, UnsendableBodyError } from './forward-body.js';
export { restoreFastPrototypes } from './fast-prototypes.js';
