/**
 * The forms a client's system prompt comes in, and how the route's prompt combines with it under each
 * strategy (replace / prepend / append): exactly one system prompt, first, in the client's own form
 * (FIELD-NOTES 3), cache markers kept (FIELD-NOTES 11), and never a second copy of ours.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Strategy } from '../../src/index.js';
import {
  apiReply,
  promptCopies,
  startFakeUpstream,
  startGatewayForTest,
  type ApiName,
  type FakeUpstream,
  type RecordedRequest,
  type TestGateway,
} from '../support/fake-upstream.js';
import { anthropicClient, CHAT_PATH, openaiClient, postJson } from './clients.js';

const ACTION = 'fix the failing test in src/app.ts';
const STRATEGY_LIST: readonly Strategy[] = ['replace', 'prepend', 'append'];

let upstream: FakeUpstream;
const gateways = {} as Record<Strategy, TestGateway>;

beforeAll(async () => {
  upstream = await startFakeUpstream(apiReply('ok'));
  for (const strategy of STRATEGY_LIST) gateways[strategy] = await startGatewayForTest({ upstreamUrl: upstream.url, overrides: { strategy } });
});
afterAll(async () => {
  for (const gateway of Object.values(gateways)) await gateway?.close();
  await upstream?.close();
});
beforeEach(() => {
  upstream.reset();
  upstream.respond(apiReply('ok'));
});

/** Sends `body` to the chat path of `api` through the gateway of `strategy`; returns what the upstream got. */
async function through(strategy: Strategy, api: ApiName, body: unknown): Promise<RecordedRequest> {
  const before = upstream.requests.length;
  const response = await postJson(gateways[strategy].url, CHAT_PATH[api], body);
  expect(response.status).toBe(200);
  await response.arrayBuffer();
  expect(upstream.requests).toHaveLength(before + 1);
  return upstream.last();
}

/** What the client's text and ours become under a strategy. */
function composed(strategy: Strategy, ours: string, client: string): string {
  if (strategy === 'replace') return ours;
  return strategy === 'prepend' ? `${ours}\n\n${client}` : `${client}\n\n${ours}`;
}

const prompts = () => gateways.replace.prompts;

describe.each(STRATEGY_LIST)('strategy %s', (strategy) => {
  describe('OpenAI chat completions', () => {
    it('no system prompt: ours becomes the first message', async () => {
      const seen = await through(strategy, 'openai-chat', { model: 'm', messages: [{ role: 'user', content: ACTION }] });
      expect(seen.json.messages).toEqual([
        { role: 'system', content: prompts().action },
        { role: 'user', content: ACTION },
      ]);
    });

    it('a string system prompt: combined by strategy into the one leading system message', async () => {
      const seen = await through(strategy, 'openai-chat', {
        model: 'm',
        messages: [{ role: 'system', content: 'You are Clawdbot.' }, { role: 'user', content: ACTION }],
      });
      expect(seen.json.messages).toEqual([
        { role: 'system', content: composed(strategy, prompts().action, 'You are Clawdbot.') },
        { role: 'user', content: ACTION },
      ]);
    });

    it('several system messages, one after a user turn, merge into one leading message', async () => {
      const seen = await through(strategy, 'openai-chat', {
        model: 'm',
        messages: [
          { role: 'system', content: 'Rule A.' },
          { role: 'user', content: 'hello' },
          { role: 'assistant', content: 'hi, what should I do?' },
          { role: 'system', content: 'Rule B.' },
          { role: 'user', content: ACTION },
        ],
      });
      const messages = seen.json.messages;
      expect(messages[0]).toEqual({ role: 'system', content: composed(strategy, prompts().action, 'Rule A.\n\nRule B.') });
      expect(messages.filter((m: { role: string }) => m.role === 'system' || m.role === 'developer')).toHaveLength(1);
      expect(messages.slice(1)).toEqual([
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi, what should I do?' },
        { role: 'user', content: ACTION },
      ]);
      expect(promptCopies(seen.text, prompts().action)).toBe(1);
    });

    it('a developer message keeps the developer role', async () => {
      const seen = await through(strategy, 'openai-chat', {
        model: 'm',
        messages: [{ role: 'developer', content: 'Answer in French.' }, { role: 'user', content: ACTION }],
      });
      expect(seen.json.messages).toEqual([
        { role: 'developer', content: composed(strategy, prompts().action, 'Answer in French.') },
        { role: 'user', content: ACTION },
      ]);
    });

    it('array content parts stay parts', async () => {
      const clientParts = [
        { type: 'text', text: 'Part one.' },
        { type: 'text', text: 'Part two.' },
      ];
      const seen = await through(strategy, 'openai-chat', {
        model: 'm',
        messages: [{ role: 'system', content: clientParts }, { role: 'user', content: ACTION }],
      });
      const ours = { type: 'text', text: prompts().action };
      const expected = strategy === 'replace' ? [ours] : strategy === 'prepend' ? [ours, ...clientParts] : [...clientParts, ours];
      expect(seen.json.messages).toEqual([{ role: 'system', content: expected }, { role: 'user', content: ACTION }]);
    });
  });

  describe('Anthropic messages', () => {
    it('no system: ours becomes `system`', async () => {
      const seen = await through(strategy, 'anthropic', { model: 'c', max_tokens: 8, messages: [{ role: 'user', content: ACTION }] });
      expect(seen.json.system).toBe(prompts().action);
      expect(seen.json.messages).toEqual([{ role: 'user', content: ACTION }]);
    });

    it('`system` as a string stays a string, combined by strategy', async () => {
      const seen = await through(strategy, 'anthropic', {
        model: 'c', max_tokens: 8, system: 'You are Clawdbot.', messages: [{ role: 'user', content: ACTION }],
      });
      expect(seen.json.system).toBe(composed(strategy, prompts().action, 'You are Clawdbot.'));
    });

    it('`system` as blocks with cache_control: blocks kept, markers kept', async () => {
      const a = { type: 'text', text: 'Block A.', cache_control: { type: 'ephemeral' } };
      const b = { type: 'text', text: 'Block B.', cache_control: { type: 'ephemeral', ttl: '1h' } };
      const c = { type: 'text', text: 'Block C.' };
      const seen = await through(strategy, 'anthropic', {
        model: 'c', max_tokens: 8, system: [a, b, c], messages: [{ role: 'user', content: ACTION }],
      });
      if (strategy === 'replace') {
        // Our block replaces the client's and carries the client's last cache marker.
        expect(seen.json.system).toEqual([{ type: 'text', text: prompts().action, cache_control: { type: 'ephemeral', ttl: '1h' } }]);
      } else {
        const ours = { type: 'text', text: prompts().action };
        expect(seen.json.system).toEqual(strategy === 'prepend' ? [ours, a, b, c] : [a, b, c, ours]);
      }
    });

    it('`system` blocks without markers: ours gets none', async () => {
      const seen = await through(strategy, 'anthropic', {
        model: 'c', max_tokens: 8, system: [{ type: 'text', text: 'Plain block.' }], messages: [{ role: 'user', content: ACTION }],
      });
      const ours = { type: 'text', text: prompts().action };
      const client = { type: 'text', text: 'Plain block.' };
      expect(seen.json.system).toEqual(strategy === 'replace' ? [ours] : strategy === 'prepend' ? [ours, client] : [client, ours]);
    });
  });

  describe('OpenAI responses', () => {
    it('no instructions: ours become `instructions`', async () => {
      const seen = await through(strategy, 'openai-responses', { model: 'm', input: ACTION });
      expect(seen.json.instructions).toBe(prompts().action);
      expect(seen.json.input).toBe(ACTION);
    });

    it('client instructions are combined by strategy', async () => {
      const seen = await through(strategy, 'openai-responses', { model: 'm', instructions: 'Be terse.', input: ACTION });
      expect(seen.json.instructions).toBe(composed(strategy, prompts().action, 'Be terse.'));
    });

    it('system and developer messages in `input` are the client\'s prompt too: moved into `instructions` by strategy', async () => {
      const user = { role: 'user', content: [{ type: 'input_text', text: ACTION }] };
      const seen = await through(strategy, 'openai-responses', {
        model: 'm',
        instructions: 'Be terse.',
        input: [{ role: 'developer', content: 'Dev rule.' }, { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'Sys rule.' }] }, user],
      });
      expect(seen.json.instructions).toBe(composed(strategy, prompts().action, 'Be terse.\n\nDev rule.\n\nSys rule.'));
      expect(seen.json.input).toEqual([user]);
    });
  });
});

describe('our prompt is byte-stable per route (prompt caching)', () => {
  it('two requests of the same route with different client prompts get the same system bytes under replace', async () => {
    const one = await through('replace', 'anthropic', { model: 'c', max_tokens: 8, system: 'Client one.', messages: [{ role: 'user', content: ACTION }] });
    const two = await through('replace', 'anthropic', { model: 'c', max_tokens: 8, system: 'Client two.', messages: [{ role: 'user', content: 'fix the bug in src/db.ts' }] });
    expect(JSON.stringify(one.json.system)).toBe(JSON.stringify(two.json.system));
  });
});

/** Bodies that already went through the gateway once must come out of a second pass unchanged. */
describe('idempotency: a body that already carries our prompt gets no second copy', () => {
  const marker = { type: 'ephemeral', ttl: '1h' };
  const bodies: Record<string, { api: ApiName; body: Record<string, unknown> }> = {
    'chat, no system': { api: 'openai-chat', body: { model: 'm', messages: [{ role: 'user', content: ACTION }] } },
    'chat, string system': { api: 'openai-chat', body: { model: 'm', messages: [{ role: 'system', content: 'You are Clawdbot.' }, { role: 'user', content: ACTION }] } },
    'chat, developer parts': {
      api: 'openai-chat',
      body: { model: 'm', messages: [{ role: 'developer', content: [{ type: 'text', text: 'Dev rule.' }] }, { role: 'user', content: ACTION }] },
    },
    'anthropic, string system': { api: 'anthropic', body: { model: 'c', max_tokens: 8, system: 'You are Clawdbot.', messages: [{ role: 'user', content: ACTION }] } },
    'anthropic, blocks without marker': {
      api: 'anthropic',
      body: { model: 'c', max_tokens: 8, system: [{ type: 'text', text: 'Block.' }], messages: [{ role: 'user', content: ACTION }] },
    },
    'responses, instructions': { api: 'openai-responses', body: { model: 'm', instructions: 'Be terse.', input: ACTION } },
  };

  describe.each(STRATEGY_LIST)('strategy %s', (strategy) => {
    it.each(Object.keys(bodies))('%s', async (name) => {
      const { api, body } = bodies[name]!;
      const once = await through(strategy, api, body);
      const twice = await through(strategy, api, once.json);
      expect(twice.json).toEqual(once.json);
      expect(promptCopies(twice.text, prompts().action)).toBe(1);
    });

    it('anthropic blocks with a cache marker: one copy of our prompt after a second pass', async () => {
      const body = {
        model: 'c', max_tokens: 8,
        system: [{ type: 'text', text: 'Block A.', cache_control: marker }],
        messages: [{ role: 'user', content: ACTION }],
      };
      const once = await through(strategy, 'anthropic', body);
      const twice = await through(strategy, 'anthropic', once.json);
      expect(promptCopies(twice.text, prompts().action)).toBe(1);
      if (strategy !== 'replace') expect(twice.json).toEqual(once.json);
    });
  });

  // Under replace the client's cache marker moves onto our block; a second pass must keep it (f(f(x)) = f(x)).
  it('anthropic blocks with a cache marker under replace: a second pass keeps the marker (f(f(x)) = f(x))', async () => {
    const body = {
      model: 'c', max_tokens: 8,
      system: [{ type: 'text', text: 'Block A.', cache_control: marker }],
      messages: [{ role: 'user', content: ACTION }],
    };
    const once = await through('replace', 'anthropic', body);
    expect(once.json.system).toEqual([{ type: 'text', text: prompts().action, cache_control: marker }]);
    const twice = await through('replace', 'anthropic', once.json);
    expect(twice.json.system).toEqual(once.json.system);
  });

  it('an action + planning-debate prompt is not duplicated on a second pass', async () => {
    const body = { model: 'm', messages: [{ role: 'system', content: 'Mine.' }, { role: 'user', content: 'drop the users table in prod' }] };
    for (const strategy of STRATEGY_LIST) {
      const once = await through(strategy, 'openai-chat', body);
      const twice = await through(strategy, 'openai-chat', once.json);
      expect(twice.json).toEqual(once.json);
      expect(promptCopies(twice.text, prompts().action)).toBe(1);
      expect(promptCopies(twice.text, prompts().debatePlanning)).toBe(1);
    }
  });

  it('a body carrying our ANSWER prompt that now routes ACTION swaps it (no stale prompt stays)', async () => {
    const body = { model: 'm', messages: [{ role: 'system', content: `${prompts().answer}\n\nMine.` }, { role: 'user', content: ACTION }] };
    for (const strategy of STRATEGY_LIST) {
      const seen = await through(strategy, 'openai-chat', body);
      expect(promptCopies(seen.text, prompts().answer)).toBe(0);
      expect(promptCopies(seen.text, prompts().action)).toBe(1);
      expect(seen.json.messages[0].content).toBe(composed(strategy, prompts().action, 'Mine.'));
    }
  });
});

describe('system prompt forms through the SDKs', () => {
  it('openai SDK with a developer message and parts', async () => {
    const client = openaiClient(gateways.prepend.url);
    const reply = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'Dev rule.' }] },
        { role: 'user', content: ACTION },
      ],
    });
    expect(reply.choices[0]?.message.content).toBe('ok');
    const seen = upstream.last();
    expect(seen.json.messages[0]).toEqual({ role: 'developer', content: [{ type: 'text', text: prompts().action }, { type: 'text', text: 'Dev rule.' }] });
  });

  it('anthropic SDK with cache-marked system blocks under replace', async () => {
    const client = anthropicClient(gateways.replace.url);
    const reply = await client.messages.create({
      model: 'claude-test',
      max_tokens: 16,
      system: [{ type: 'text', text: 'Long stable context.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: ACTION }],
    });
    expect(reply.content[0]).toMatchObject({ type: 'text', text: 'ok' });
    expect(upstream.last().json.system).toEqual([{ type: 'text', text: prompts().action, cache_control: { type: 'ephemeral' } }]);
  });
});

/**
 * The client's own system prompt is the client's: its blank lines and leading or trailing whitespace
 * (a few-shot layout, a code sample) reach the upstream as written unless a prompt of ours was in it.
 */
describe('the client\'s system prompt is forwarded byte for byte under prepend and append', () => {
  const layout = '\n  Answer in this exact layout:\n\n\n\nQ: …\n\n\nA: …\n\n```python\ndef f():\n    pass\n\n\n\ndef g():\n    pass\n```\n  ';

  describe.each(['prepend', 'append'] as const)('strategy %s', (strategy) => {
    it('OpenAI chat: a string system message holding none of our prompts', async () => {
      const seen = await through(strategy, 'openai-chat', { model: 'm', messages: [{ role: 'system', content: layout }, { role: 'user', content: ACTION }] });
      expect(seen.json.messages[0]).toEqual({ role: 'system', content: composed(strategy, prompts().action, layout) });
    });

    it('OpenAI chat: text parts holding none of our prompts', async () => {
      const parts = [{ type: 'text', text: layout }];
      const seen = await through(strategy, 'openai-chat', { model: 'm', messages: [{ role: 'system', content: parts }, { role: 'user', content: ACTION }] });
      const ours = { type: 'text', text: prompts().action };
      expect(seen.json.messages[0].content).toEqual(strategy === 'prepend' ? [ours, ...parts] : [...parts, ours]);
    });

    it('Anthropic: `system` as a string and as blocks', async () => {
      const asString = await through(strategy, 'anthropic', { model: 'c', max_tokens: 8, system: layout, messages: [{ role: 'user', content: ACTION }] });
      expect(asString.json.system).toBe(composed(strategy, prompts().action, layout));
      const block = { type: 'text', text: layout };
      const asBlocks = await through(strategy, 'anthropic', { model: 'c', max_tokens: 8, system: [block], messages: [{ role: 'user', content: ACTION }] });
      const ours = { type: 'text', text: prompts().action };
      expect(asBlocks.json.system).toEqual(strategy === 'prepend' ? [ours, block] : [block, ours]);
    });

    it('OpenAI responses: `instructions`', async () => {
      const seen = await through(strategy, 'openai-responses', { model: 'm', instructions: layout, input: ACTION });
      expect(seen.json.instructions).toBe(composed(strategy, prompts().action, layout));
    });

    it('a second pass removes our prompt and the gap it left, and nothing of the client\'s', async () => {
      const body = { model: 'm', messages: [{ role: 'system', content: layout }, { role: 'user', content: 'drop the users table in prod' }] };
      const once = await through(strategy, 'openai-chat', body);
      const twice = await through(strategy, 'openai-chat', once.json);
      expect(twice.json).toEqual(once.json);
      expect(promptCopies(twice.text, prompts().debatePlanning)).toBe(1);
      const content: string = twice.json.messages[0].content;
      expect(strategy === 'prepend' ? content.endsWith(`\n\n${layout}`) : content.startsWith(`${layout}\n\n`)).toBe(true);
    });
  });

  it('a prompt of ours between two client texts leaves one separator, the client\'s text around it untouched', async () => {
    const client = `  Rule A.\n\n${prompts().answer}\n\nRule B.\n\n\n`;
    const seen = await through('prepend', 'openai-chat', { model: 'm', messages: [{ role: 'system', content: client }, { role: 'user', content: ACTION }] });
    expect(seen.json.messages[0].content).toBe(composed('prepend', prompts().action, '  Rule A.\n\nRule B.\n\n\n'));
  });
});

/**
 * A Responses system or developer item is the client's prompt: its text reaches `instructions` whole,
 * however many parts it is sent in, and one holding anything but text stays in `input` under prepend
 * and append (`instructions` is a string: an image or a file cannot go there).
 */
describe('OpenAI responses: system and developer items in `input`', () => {
  // An agent's repo map sent one part per file: 200 parts of 1,000 characters, past any classifier read limit.
  const files = Array.from({ length: 200 }, (_, index) => ({ type: 'input_text', text: `FILE-${String(index).padStart(3, '0')} ${'x'.repeat(990)}` }));
  const user = { role: 'user', content: [{ type: 'input_text', text: ACTION }] };

  describe.each(['prepend', 'append'] as const)('strategy %s', (strategy) => {
    it('an item of many text parts reaches `instructions` whole, in order', async () => {
      const seen = await through(strategy, 'openai-responses', { model: 'm', input: [{ role: 'developer', content: files }, user] });
      expect(seen.json.instructions).toBe(composed(strategy, prompts().action, files.map((part) => part.text).join('\n')));
      expect(seen.json.input).toEqual([user]);
    });

    it('an item holding an image stays in `input` whole; text-only items still move', async () => {
      const withImage = { role: 'system', content: [{ type: 'input_text', text: 'Match this style:' }, { type: 'input_image', image_url: 'https://example.com/style.png' }] };
      const seen = await through(strategy, 'openai-responses', {
        model: 'm',
        instructions: 'Be terse.',
        input: [withImage, { role: 'developer', content: 'Dev rule.' }, user],
      });
      expect(seen.json.instructions).toBe(composed(strategy, prompts().action, 'Be terse.\n\nDev rule.'));
      expect(seen.json.input).toEqual([withImage, user]);
    });

    it('a kept item loses a prompt of ours on a second pass, nothing else', async () => {
      const withImage = { role: 'system', content: [{ type: 'input_text', text: `${prompts().answer}\n\nMatch this style:` }, { type: 'input_image', image_url: 'https://example.com/style.png' }] };
      const seen = await through(strategy, 'openai-responses', { model: 'm', input: [withImage, user] });
      expect(seen.json.input).toEqual([{ ...withImage, content: [{ type: 'input_text', text: 'Match this style:' }, withImage.content[1]] }, user]);
      expect(promptCopies(seen.text, prompts().answer)).toBe(0);
    });
  });

  it('under replace every system item goes, images included: the model sees our prompt alone', async () => {
    const withImage = { role: 'system', content: [{ type: 'input_text', text: 'Match this style:' }, { type: 'input_image', image_url: 'https://example.com/style.png' }] };
    const seen = await through('replace', 'openai-responses', { model: 'm', input: [withImage, { role: 'developer', content: files }, user] });
    expect(seen.json.instructions).toBe(prompts().action);
    expect(seen.json.input).toEqual([user]);
  });
});
