/**
 * Metrics are ready before traffic: every counter with a closed label set is exposed at 0 from the
 * first scrape (a rate or an alert needs a series before its first event), and the shipped Prometheus
 * rules and Grafana dashboard only name metrics the gateway exposes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import type { RunningGateway } from '../../gateway/app.js';
import { createClassifier } from '../../src/index.js';
import { ROOT } from '../support/config-file.js';
import { parseSamples, series, startConfigured, type Sample } from '../support/running.js';

let dir: string;
let gateway: RunningGateway;
let first: Sample[];
let firstText: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'task-router-metrics-ready-'));
  gateway = await startConfigured(dir);
  // The very first request: a scrape counts in task_router_request_duration_seconds once it is answered.
  firstText = await (await fetch(`${gateway.url}/metrics`)).text();
  first = parseSamples(firstText);
});
afterAll(async () => {
  await gateway?.close();
  await rm(dir, { recursive: true, force: true });
});

function gatewayRuleCount(): number {
  return createClassifier().ruleIds.length;
}

const promtool = () => {
  if (spawnSync('promtool', ['--version']).error) {
    expect(process.env.CI, 'promtool is required in CI').not.toBe('true');
    return false;
  }
  return true;
};

describe('counters exist at 0 before any traffic', () => {
  const closedSets: [string, number][] = [
    ['task_router_decisions_total', 2 * 3 * 2 * 7],
    ['task_router_overrides_total', 2],
    ['task_router_fallbacks_total', 4],
    ['task_router_skipped_total', 3],
    ['task_router_outcomes_total', 3],
    ['task_router_debates_total', 3 * 3],
    ['task_router_upstream_errors_total', 5],
    ['task_router_unsure_total', 5 * 2],
    ['task_router_tiebreaks_total', 6],
    ['task_router_uncaught_errors_total', 2 * 2],
    ['task_router_config_reloads_total', 2],
    ['task_router_log_dropped_total', 2 * 2],
    ['task_router_shutdown_cuts_total', 2],
    ['task_router_classify_only_total', 4],
    ['task_router_upstream_responses_total', 4 * 6],
    ['task_router_request_duration_seconds_count', 4 * 2],
    ['task_router_triggers_total', gatewayRuleCount()],
  ];
  it.each(closedSets)('%s: every label combination, at 0', (name, count) => {
    const found = series(first, name);
    expect(Object.keys(found)).toHaveLength(count);
    expect(Object.values(found).every((value) => value === 0)).toBe(true);
  });

  it('the first scrape passes promtool check metrics', () => {
    if (!promtool()) return;
    const checked = spawnSync('promtool', ['check', 'metrics'], { input: firstText, encoding: 'utf8' });
    expect(`${checked.stdout}${checked.stderr}`).toBe('');
    expect(checked.status).toBe(0);
  });
});

/** Metric names in a PromQL expression: identifiers followed by a selector, a range or nothing, less functions and keywords. */
function metricNames(expr: string): string[] {
  const withoutStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  const names = new Set<string>();
  for (const [, name] of withoutStrings.matchAll(/\b([a-z_:][a-z0-9_:]*)\b(?!\s*\()/gi)) if (name?.startsWith('task_router')) names.add(name);
  return [...names];
}

describe('examples/', () => {
  const RulesSchema = z.object({ groups: z.array(z.object({ name: z.string(), rules: z.array(z.object({ record: z.string().optional(), alert: z.string().optional(), expr: z.string() }).loose()) }).loose()) });
  const DashboardSchema = z.object({ panels: z.array(z.object({ title: z.string(), targets: z.array(z.object({ expr: z.string() }).loose()) }).loose()) }).loose();

  it('prometheus-rules.yml passes promtool check rules', () => {
    if (!promtool()) return;
    const checked = spawnSync('promtool', ['check', 'rules', join(ROOT, 'examples/prometheus-rules.yml')], { encoding: 'utf8' });
    expect(checked.status, `${checked.stdout}${checked.stderr}`).toBe(0);
  });

  it('the rules and the dashboard name only metrics the gateway exposes (or the rules record)', async () => {
    const exposed = new Set(first.map((sample) => sample.name));
    const rules = RulesSchema.parse(parse(await readFile(join(ROOT, 'examples/prometheus-rules.yml'), 'utf8')));
    const recorded = new Set(rules.groups.flatMap((group) => group.rules.flatMap((rule) => (rule.record ? [rule.record] : []))));
    const alerts = rules.groups.flatMap((group) => group.rules.flatMap((rule) => (rule.alert ? [rule.alert] : [])));
    expect(alerts).toEqual(expect.arrayContaining(['TaskRouterFallbackRateHigh', 'TaskRouterUpstreamErrors', 'TaskRouterClassifyP99Slow']));
    const dashboard = DashboardSchema.parse(JSON.parse(await readFile(join(ROOT, 'examples/grafana-dashboard.json'), 'utf8')));
    const exprs = [...rules.groups.flatMap((group) => group.rules.map((rule) => rule.expr)), ...dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr))];
    expect(exprs.length).toBeGreaterThan(10);
    for (const expr of exprs) {
      for (const name of metricNames(expr)) expect(exposed.has(name) || recorded.has(name), `${name} in ${expr}`).toBe(true);
    }
  });
});
