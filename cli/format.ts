import type { Decision, EvalReport } from '../src/index.js';

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;

/** A readable explanation of one decision. */
export function explainDecision(text: string, decision: Decision): string {
  const route = decision.trivial ? 'ACTION (tool specialist fast path)' : decision.mode;
  const why: Record<Decision['step'], string> = {
    fast_path: 'the whole message is one trivial command',
    question: 'it starts as a question and carries no external reference',
    triggers: 'ACTION triggers matched',
    scorer: 'the scorer overturned the rules',
    context: 'a follow-up: it takes the route of the turn it continues',
    default: 'no question pattern and no ACTION trigger: default',
    override: 'forced by an override',
  };
  const lines = [
    `${JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text)} → ${route}`,
    `  Step:       ${decision.step} (${why[decision.step]})`,
    `  Confidence: ${decision.confidence} (${decision.triggers.length} distinct trigger${decision.triggers.length === 1 ? '' : 's'})`,
  ];
  for (const trigger of decision.triggers) lines.push(`    - ${trigger.rule} [${trigger.category}] "${trigger.match}"`);
  if (decision.scorer !== null && !decision.trivial) {
    lines.push(`  Score:      ${decision.score.toFixed(3)} probability of ACTION${decision.unsure ? ' (unsure: inside the band)' : ''}`);
    for (const { feature, weight } of decision.features) lines.push(`    ${weight >= 0 ? '+' : '-'}${Math.abs(weight).toFixed(2)} ${feature}`);
  }
  if (decision.followed) lines.push(`  Context:    followed ${decision.followed === 'offer' ? "the assistant's offer" : decision.followed === 'previous' ? 'the previous human turn' : 'a decline'}`);
  const debate = decision.debate;
  if (debate.stakes !== 'none') {
    lines.push(`  Debate:     ${debate.verdict} (stakes ${debate.stakes}${debate.bypass ? `, bypassed: ${debate.bypass}` : ''})`);
    for (const reason of debate.reasons) lines.push(`    - ${reason.rule} [${reason.category}] "${reason.match}"`);
  }
  if (decision.scan.truncated) lines.push(`  Scan:       ${decision.scan.scanned} of ${decision.scan.length} characters (head and tail)`);
  if (decision.micros !== undefined) lines.push(`  Time:       ${decision.micros.toFixed(1)} µs on ${decision.engine}`);
  return lines.join('\n');
}

/** The eval report for people: totals, gates, confusion matrix, per category, misses. */
export function formatReport(file: string, report: EvalReport): string {
  const gate = (ok: boolean) => (ok ? 'pass' : 'FAIL');
  const lines = [
    `${file}: ${report.total} messages`,
    `  accuracy             ${percent(report.accuracy)} (${report.correct}/${report.total})   gate > 90%: ${gate(report.gates.accuracy)}`,
    `  false-positive rate  ${percent(report.falsePositiveRate)} (${report.falsePositives} ANSWER sent to ACTION)   gate < 5%: ${gate(report.gates.falsePositiveRate)}`,
    `  false negatives      ${report.falseNegatives} (needs_ops sent to ANSWER)   gate = 0: ${gate(report.gates.falseNegatives)}`,
    `  unsure               ${percent(report.unsure.rate)} (${report.unsure.count}); accuracy on the rest ${percent(report.unsure.sureAccuracy)}`,
    `  unsure sent to       ANSWER: ${percent(report.policies.answer)} accuracy; ACTION: ${percent(report.policies.action)} (forced choice: ${percent(report.accuracy)})`,
    '',
    '  confusion (rows expected, columns given)',
    '              ANSWER  ACTION',
    `    ANSWER  ${String(report.confusion.ANSWER.ANSWER).padStart(8)}${String(report.confusion.ANSWER.ACTION).padStart(8)}`,
    `    ACTION  ${String(report.confusion.ACTION.ANSWER).padStart(8)}${String(report.confusion.ACTION.ACTION).padStart(8)}`,
    '',
    '  per category',
  ];
  for (const [name, bucket] of Object.entries(report.categories).sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`    ${name.padEnd(26)} ${percent(bucket.accuracy).padStart(6)}  (${bucket.correct}/${bucket.total})`);
  }
  if (report.misses.length > 0) {
    lines.push('', '  misses');
    for (const miss of report.misses) {
      lines.push(`    line ${miss.line} [${miss.kind}] expected ${miss.expected}, got ${miss.got} by ${miss.step}: ${JSON.stringify(miss.text.slice(0, 100))}${miss.triggers.length ? `  {${miss.triggers.join(', ')}}` : ''}`);
    }
  }
  lines.push('', report.gates.passed ? 'quality gates: passed' : 'quality gates: FAILED');
  return lines.join('\n');
}
