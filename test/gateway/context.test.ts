import { describe, expect, it } from 'vitest';
import { gatewayAndUpstream } from '../support/suite.js';
import type { FakeUpstream, TestGateway } from '../support/fake-upstream.js';

let upstream: FakeUpstream;
let gateway: TestGateway;

gatewayAndUpstream((made) => ({ gateway, upstream } = made));

const offer = 'The disk on db-2 is at 97%. Want me to delete the snapshots older than 30 days?';

/** The same conversation in each API's shape: a request, an offer to act, and a bare go-ahead. */
const bodies: Record<string, { path: string; body: object }> = {
  'openai-chat': {
    path: '/v1/chat/completions',
    body: { model: 'm', messages: [{ role: 'user', content: 'the staging database is almost full' }, { role: 'assistant', content: offer }, { role: 'user', content: 'yes please' }] },
  },
  anthropic: {
    path: '/v1/messages',
    body: { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'text', text: 'the staging database is almost full' }] }, { role: 'assistant', content: [{ type: 'text', text: offer }] }, { role: 'user', content: [{ type: 'text', text: 'yes please' }] }] },
  },
  'openai-responses': {
    path: '/v1/responses',
    body: { model: 'm', input: [{ role: 'user', content: 'the staging database is almost full' }, { role: 'assistant', content: [{ type: 'output_text', text: offer }] }, { role: 'user', content: 'yes please' }] },
  },
};

async function post(path: string, body: object): Promise<Response> {
  const response = await fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await response.arrayBuffer();
  return response;
}

describe('the conversation is context, in every format', () => {
  it.each(Object.entries(bodies))('%s: a go-ahead after an offer to act is ACTION by context', async (_name, { path, body }) => {
    const response = await post(path, body);
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(response.headers.get('x-task-router-step')).toBe('context');
  });

  it('the same go-ahead after an offer to explain is ANSWER', async () => {
    const response = await post('/v1/chat/completions', {
      model: 'm',
      messages: [
        { role: 'user', content: 'what is a B-tree?' },
        { role: 'assistant', content: 'A balanced search tree with many keys per node. Would you like me to explain how a lookup works?' },
        { role: 'user', content: 'yes please' },
      ],
    });
    expect(response.headers.get('x-task-router-mode')).toBe('ANSWER');
  });

  it('a decline of an offer to act is ANSWER', async () => {
    const response = await post('/v1/chat/completions', {
      model: 'm',
      messages: [{ role: 'user', content: 'the staging database is almost full' }, { role: 'assistant', content: offer }, { role: 'user', content: 'no, not yet' }],
    });
    expect(response.headers.get('x-task-router-mode')).toBe('ANSWER');
  });

  it('tool results after the go-ahead keep its route: the agent loop does not change the decision', async () => {
    const response = await post('/v1/chat/completions', {
      model: 'm',
      messages: [
        { role: 'user', content: 'the staging database is almost full' },
        { role: 'assistant', content: offer },
        { role: 'user', content: 'yes please' },
        { role: 'assistant', content: null, tool_calls: [{ id: 't1', type: 'function', function: { name: 'sh', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 't1', content: 'deleted 14 snapshots' },
      ],
    });
    expect(response.headers.get('x-task-router-mode')).toBe('ACTION');
    expect(response.headers.get('x-task-router-step')).toBe('context');
  });
});
