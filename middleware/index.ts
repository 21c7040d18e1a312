/**
 * task-router's Express surface: the routing middleware for an existing gateway, and the standalone
 * gateway built around it.
 */
export { taskRouter, decisionHeaders, debatesOf, HEADER, type RoutedDecision, type RoutingHooks, type RoutingSnapshot, type TaskRouterOptions } from './task-router.js';
export { jsonBody, bodyErrors, dropHopByHop } from './json-body.js';
export { finalErrorHandler } from './errors.js';
export { refuseAmbiguousPaths } from './paths.js';
export { messageLimit, DEFAULT_MAX_MESSAGES } from './limits.js';
export { loadPrompts, DEFAULT_PROMPTS_DIR } from './prompts.js';
export { loadConfig, ConfigSchema, ConfigError, DEFAULT_CONFIG_FILE, type GatewayConfig } from './config.js';
export { createGatewayApp, startGateway, type RunningGateway } from './gateway.js';
export { buildSnapshot } from './snapshot.js';
export { RoutingRuntime, type ReloadResult } from './runtime.js';
export { adminRouter } from './admin.js';
export { MemorySessionStore, SessionTracker, SESSION_ID, type DecisionReport, type SessionSettings, type SessionStore } from './sessions.js';
export { outcomesRouter, sessionsRouter, OutcomeSchema, type OutcomesOptions } from './outcomes.js';
export { createUpstreamProxy, restreamBody } from './proxy.js';
export { startEchoUpstream } from './echo-upstream.js';
