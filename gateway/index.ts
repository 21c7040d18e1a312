/**
 * task-router's standalone gateway: the Express app around the routing middleware, with the proxy,
 * configuration and reload, admin API, outcomes, metrics and logs.
 */
export { loadConfig, ConfigSchema, ConfigError, DEFAULT_CONFIG_FILE, type GatewayConfig } from './config.js';
export { createGatewayApp, startGateway, type RunningGateway } from './app.js';
export { expressServer } from './express-server.js';
export { buildSnapshot } from './snapshot.js';
export { RoutingRuntime, type ReloadResult } from './runtime.js';
export { adminRouter } from './admin.js';
export { outcomesRouter, sessionsRouter, OutcomeSchema, type OutcomesOptions } from './outcomes.js';
export { createUpstreamProxy } from './proxy.js';
export { startEchoUpstream } from './echo-upstream.js';
