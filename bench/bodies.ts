/**
 * Request bodies for bench/gateway.ts: realistic OpenAI chat completion bodies of about 1.3 KB (a client
 * system prompt, one earlier exchange, then the latest user turn). The latest turn is generated from parts
 * by a mixed-radix counter, so no two requests of a run carry the same text (an exact-text cache anywhere
 * on the path cannot flatter the figures), and it alternates between a question (ANSWER-ish) and a request
 * to act (ACTION-ish). The rest of the body is serialised once; each body is prefix + JSON string + suffix.
 * With tool rounds, an agent's tool calls and their results sit between the earlier exchange and the
 * latest turn, as in a coding agent's conversation (about 590 bytes a round).
 */

const CLIENT_SYSTEM_PROMPT = [
  'You are Atlas, the engineering assistant of the payments platform team.',
  'You help engineers understand, debug and change a TypeScript monorepo (services/, packages/, infra/).',
  'Be precise and brief. Prefer concrete file paths, commands and code over general advice.',
  'Never invent APIs, configuration keys or flags. Quote error messages exactly.',
  'Conventions: strict TypeScript, ESM, vitest, zod, pino, conventional commits.',
  'Production changes need a linked ticket and a reviewer; say so when a suggestion touches production.',
].join('\n');

const HISTORY = [
  {
    role: 'user',
    content: 'The nightly billing export has been flaky since we moved it to the new queue worker: about one run in five times out after 30 minutes, while it normally takes 4.',
  },
  {
    role: 'assistant',
    content: 'A job that usually takes 4 minutes but sometimes hits a 30 minute timeout is most often waiting rather than working: a lock held by another run, an exhausted connection pool, or a retry loop with a long backoff. Do you have the logs of the last slow run?',
  },
];

const MODEL = 'gpt-4o-mini';

/** The i-th tool round of an agent's conversation: a call and its result. */
function toolRound(i: number): object[] {
  const id = `call_${String(i).padStart(4, '0')}`;
  const file = `services/billing/src/jobs/export-${i % 7}.ts`;
  return [
    { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: file, start: i * 40, lines: 40 }) } }] },
    {
      role: 'tool',
      tool_call_id: id,
      content: `${file} lines ${i * 40}-${i * 40 + 40}:\n  const batch = await queue.take(${i % 5 + 1}, { leaseMs: 30_000 });\n  for (const job of batch) {\n    await exportInvoices(job.accountId, { since: job.cursor, pageSize: 500 });\n    await queue.ack(job);\n  }\n  logger.info({ batch: batch.length }, 'export batch done');`,
    },
  ];
}

// ---------------------------------------------------------------------------------------------------
// Parts of the latest turn. Each template is a list of slots; a slot is a list of alternatives.

type Template = readonly (string | readonly string[])[];

const QUESTION_LEADS = ['', 'Quick question: ', 'One more thing. ', 'Sorry, a follow-up. ', 'Hmm. ', 'Also, ', 'OK. '];
const QUESTION_TAILS = ['', ' Thanks.', ' No rush.', ' A short answer is fine.', ' Be concise.', ' Just curious.', ' Keep it brief.'];
const REQUEST_LEADS = ['', 'OK. ', 'Next step. ', 'Right. ', 'Good. ', 'Thanks. ', 'Understood. '];
const REQUEST_TAILS = ['', ' Thanks.', ' Keep me posted.', ' Be careful with prod.', ' Report back.', ' Use the usual branch naming.', ' Leave the schema alone.'];

const QUESTIONS: readonly Template[] = [
  [QUESTION_LEADS, 'Why would ', ['a lock held by a second run', 'an exhausted connection pool', 'a retry loop with exponential backoff', 'a long-running transaction', 'a slow consumer on the queue', 'a missing index on the ledger table', 'a worker that never acknowledges', 'a cold cache after deploys'],
    ' cause ', ['timeouts', 'lock waits', 'duplicate exports', 'stalled batches', 'memory growth', 'partial files', 'latency spikes'],
    ' only ', ['at night', 'on the first run after a deploy', 'when two workers overlap', 'under peak load', 'on Mondays', 'after a failover', 'for large merchants'],
    ', and how can I tell it apart from ', ['a network partition', 'a slow disk', 'GC pauses', 'DNS hiccups', 'clock skew', 'noisy neighbours', 'throttling by the database'], '?', QUESTION_TAILS],
  [QUESTION_LEADS, 'What is the difference between ', ['a mutex and a semaphore', 'optimistic and pessimistic locking', 'at-least-once and exactly-once delivery', 'a lease and a lock', 'read committed and repeatable read', 'a saga and a two-phase commit', 'backpressure and rate limiting'],
    ' when ', ['jobs run nightly', 'the queue has several consumers', 'the database is Postgres', 'workers restart often', 'batches are large', 'retries are automatic', 'exports must be idempotent'],
    ', and which one ', ['scales better', 'is easier to reason about', 'fails more gracefully', 'is cheaper to operate', 'do most teams pick', 'is safer for payments'],
    ' with ', ['two workers', 'a dozen workers', 'bursty traffic', 'a single replica', 'long transactions', 'tight deadlines', 'a managed queue'], '?', QUESTION_TAILS],
  [QUESTION_LEADS, 'How does ', ['advisory locking in Postgres', 'visibility timeout in a queue', 'connection pooling', 'jittered backoff', 'a circuit breaker', 'a dead-letter queue', 'heartbeat-based leasing'],
    ' behave ', ['under contention', 'during a deploy', 'when a worker crashes', 'with slow clients', 'across restarts', 'at high concurrency', 'when the clock jumps'],
    ', and is ', ['a simple timeout', 'a distributed lock', 'a single consumer', 'a longer lease', 'an idempotency key', 'a bigger pool', 'a per-tenant queue'],
    ' a better fit for ', ['nightly exports', 'payment retries', 'invoice generation', 'ledger reconciliation', 'webhook delivery', 'report batching', 'refund processing'], '?', QUESTION_TAILS],
  [QUESTION_LEADS, 'Should I ', ['raise the pool size', 'shorten the lease', 'add jitter to retries', 'split the export into chunks', 'move the job to its own queue', 'lower the batch size', 'add a watchdog'],
    ' or ', ['add a lock timeout', 'cap the retries', 'serialise the runs', 'add more workers', 'keep the cron job', 'use a priority queue', 'widen the time window'],
    ' first, given that ', ['the timeouts started last month', 'the data doubled this year', 'most runs are fine', 'the worker is shared', 'we cannot add hardware', 'finance needs the file by 6am', 'staging never reproduces it'],
    ' and ', ['the team is small', 'on-call is stretched', 'we deploy daily', 'audits are next week', 'the queue is managed', 'costs matter', 'the code is old'], '?', QUESTION_TAILS],
];

const REQUESTS: readonly Template[] = [
  [REQUEST_LEADS, ['Run', 'Rerun', 'Start', 'Execute', 'Trigger', 'Replay', 'Kick off'], ' the export job locally against the ', ['staging', 'sandbox', 'replica', 'preview', 'load-test', 'canary', 'shadow'],
    ' queue, grep the worker logs for ', ['lock timeouts', 'pool exhaustion', 'retry storms', 'slow queries', 'deadlocks', 'ack failures', 'heartbeat misses'],
    ' and fix the backoff in services/billing/src/jobs/', ['export', 'ledger', 'invoice', 'refund', 'payout', 'settle', 'report'], '.ts so it gives up after ', ['two', 'three', 'four', 'five', 'six', 'seven', 'eight'], ' attempts.', REQUEST_TAILS],
  [REQUEST_LEADS, ['Refactor', 'Rewrite', 'Restructure', 'Clean up', 'Simplify', 'Split up', 'Tidy'], ' packages/queue/src/', ['worker', 'lease', 'consumer', 'scheduler', 'retry', 'pool', 'dispatch'],
    '.ts to ', ['release the lease on shutdown', 'acknowledge after the write', 'use jittered backoff', 'cap concurrency per tenant', 'log the lock holder', 'time out idle connections', 'drop the global mutex'],
    ', add a vitest case in packages/queue/test/', ['worker', 'lease', 'consumer', 'scheduler', 'retry', 'pool', 'dispatch'], '.test.ts and ', ['commit it', 'open a PR', 'push the branch', 'run the suite', 'update the changelog', 'tag me for review', 'note it in the ticket'], '.', REQUEST_TAILS],
  [REQUEST_LEADS, ['Search', 'Grep', 'Look through', 'Scan', 'Check', 'Go through', 'Comb through'], ' the repo for every call to ', ['acquireLock', 'withRetry', 'getPool', 'enqueue', 'ackMessage', 'renewLease', 'withTransaction'],
    ' that ', ['ignores the timeout', 'swallows errors', 'retries forever', 'holds the lock too long', 'skips the metrics', 'runs outside a transaction', 'has no deadline'],
    ', then update ', ['the five worst', 'all of them', 'the ones in services/billing', 'the ones in packages/queue', 'the hot paths', 'the ones the export uses', 'those flagged by lint'], ' and ', ['run the tests', 'deploy to staging', 'write a summary', 'commit each fix', 'open one PR', 'ping the on-call', 'file follow-ups'], '.', REQUEST_TAILS],
  [REQUEST_LEADS, ['Deploy', 'Roll out', 'Ship', 'Push', 'Release', 'Promote', 'Stage'], ' the ', ['lease fix', 'backoff patch', 'pool change', 'lock timeout', 'chunked export', 'watchdog', 'retry cap'],
    ' to ', ['staging', 'the canary', 'one region', 'the EU cluster', 'the night shift worker', 'ten percent of tenants', 'the shadow fleet'],
    ', watch the dashboards for ', ['ten minutes', 'an hour', 'the next nightly run', 'two runs', 'the peak window', 'half an hour', 'the batch window'], ' and ', ['roll back on errors', 'post the results', 'update the runbook', 'close the ticket', 'page me if it fails', 'record the timings', 'tell finance'], '.', REQUEST_TAILS],
];

/** Distinct turns one template can produce: the product of its slot sizes. */
function combinations(template: Template): number {
  return template.reduce<number>((product, part) => product * (typeof part === 'string' ? 1 : part.length), 1);
}

/** The n-th text of a template: n in mixed radix over its slots (n below combinations(template)). */
function render(template: Template, n: number): string {
  let rest = n;
  let text = '';
  for (const part of template) {
    if (typeof part === 'string') {
      text += part;
      continue;
    }
    text += part[rest % part.length]!;
    rest = Math.floor(rest / part.length);
  }
  return text;
}

/**
 * Consecutive turns with no repeat: template t of a kind serves every kind.length-th turn of that kind,
 * so a kind runs out when its smallest template does.
 */
export const DISTINCT_TURNS = 2 * Math.min(...[QUESTIONS, REQUESTS].map((kind) => kind.length * Math.min(...kind.map(combinations))));

/** A prime step (no template's size is a multiple of it), so consecutive uses of a template differ in many slots. */
const STRIDE = 7_919;

/** The turns classifyTurns reads from the i-th body: its latest turn, and the earlier exchange every body carries. */
export function conversationTurns(i: number): { latest: string; previous: string; assistant: string } {
  return { latest: latestTurn(i), previous: HISTORY[0]!.content, assistant: HISTORY[1]!.content };
}

/** The i-th latest turn: even i a question, odd i a request to act; distinct for i below DISTINCT_TURNS. */
export function latestTurn(i: number): string {
  const kind = i % 2 === 0 ? QUESTIONS : REQUESTS;
  const k = Math.floor(i / 2);
  const template = kind[k % kind.length]!;
  const size = combinations(template);
  const n = Math.floor(k / kind.length);
  return render(template, (n * STRIDE) % size);
}

function bodyParts(stream: boolean, toolRounds: number): [string, string] {
  const marker = '\u0000TURN\u0000';
  const rounds = Array.from({ length: toolRounds }, (_, i) => toolRound(i)).flat();
  const json = JSON.stringify({
    model: MODEL,
    temperature: 0.2,
    max_tokens: 512,
    ...(stream ? { stream: true } : {}),
    messages: [{ role: 'system', content: CLIENT_SYSTEM_PROMPT }, ...HISTORY, ...rounds, { role: 'user', content: marker }],
  });
  const quoted = JSON.stringify(marker);
  const at = json.indexOf(quoted);
  return [json.slice(0, at), json.slice(at + quoted.length)];
}

const parts = new Map<string, [string, string]>();

/** The full JSON body around one latest turn, after `toolRounds` rounds of an agent's tool calls. */
export function chatBody(turn: string, stream = false, toolRounds = 0): string {
  const key = `${stream} ${toolRounds}`;
  let pair = parts.get(key);
  if (pair === undefined) parts.set(key, (pair = bodyParts(stream, toolRounds)));
  const [prefix, suffix] = pair;
  return prefix + JSON.stringify(turn) + suffix;
}

/** Hands out bodies with a fresh latest turn each time, shared by every connection of a run. */
export class BodySource {
  private next = 0;

  constructor(private readonly stream = false, private readonly toolRounds = 0) {}

  /** Bodies handed out so far. */
  get count(): number {
    return this.next;
  }

  body(): string {
    const turn = latestTurn(this.next % DISTINCT_TURNS);
    this.next += 1;
    return chatBody(turn, this.stream, this.toolRounds);
  }
}
