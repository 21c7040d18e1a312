import { describe, expect, it } from 'vitest';
import { createClassifier, createResponseChain, previousResponseId, responseIdIn, type ChainLink } from '../../src/index.js';

const classifier = createClassifier();
const linkOf = (text: string): ChainLink => ({
  human: { text, stripped: [], turns: { latest: text, previous: null, assistant: null } },
  classified: classifier.classify(text),
  tiebreak: null,
});

describe('responseIdIn', () => {
  it('finds the id of a response object and of a stream\'s first event, not an output item\'s', () => {
    expect(responseIdIn('{"id":"resp_67ccd2bed1ec8190","object":"response","output":[{"id":"msg_1"')).toBe('resp_67ccd2bed1ec8190');
    expect(responseIdIn('{"object": "response", "output": [{"id": "msg_1", "type": "message"}], "id": "resp_9"}')).toBe('resp_9');
    expect(responseIdIn('event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_abc-1","object":"response"')).toBe('resp_abc-1');
    expect(responseIdIn('{"output":[{"id":"fc_1"},{"id":"msg_2"}]')).toBeNull();
    expect(responseIdIn('{"id":"resp_')).toBeNull();
  });
});

describe('previousResponseId', () => {
  it('reads a plain id and refuses anything else', () => {
    expect(previousResponseId({ previous_response_id: 'resp_1' })).toBe('resp_1');
    expect(previousResponseId({})).toBeNull();
    expect(previousResponseId({ previous_response_id: 42 })).toBeNull();
    expect(previousResponseId({ previous_response_id: 'resp 1' })).toBeNull();
    expect(previousResponseId({ previous_response_id: `resp_${'x'.repeat(300)}` })).toBeNull();
  });
});

describe('createResponseChain', () => {
  it('forgets the least recently used response past its entries', () => {
    const chain = createResponseChain({ entries: 2, characters: 1000 });
    chain.set('resp_a', linkOf('fix the build'));
    chain.set('resp_b', linkOf('what is a mutex?'));
    expect(chain.get('resp_a')?.human.text).toBe('fix the build');
    chain.set('resp_c', linkOf('deploy it'));
    expect(chain.get('resp_b')).toBeUndefined();
    expect(chain.get('resp_a')).toBeDefined();
    expect(chain.get('resp_c')).toBeDefined();
    expect(chain.size).toBe(2);
  });

  it('holds at most its characters of human text, and never a text longer than that', () => {
    const chain = createResponseChain({ entries: 100, characters: 30 });
    chain.set('resp_a', linkOf('restart the worker pods')); // 23
    chain.set('resp_b', linkOf('run the tests')); // 13: 36 in all, so resp_a goes
    expect(chain.get('resp_a')).toBeUndefined();
    expect(chain.get('resp_b')).toBeDefined();
    chain.set('resp_c', linkOf('x'.repeat(31)));
    expect(chain.get('resp_c')).toBeUndefined();
    expect(chain.get('resp_b')).toBeDefined();
    // Set again under the same id, a link replaces the old one and its characters.
    chain.set('resp_b', linkOf('run the tests again'));
    chain.set('resp_d', linkOf('ls -la'));
    expect(chain.get('resp_b')?.human.text).toBe('run the tests again');
    expect(chain.size).toBe(2);
  });

  it('remembers nothing with no entries', () => {
    const chain = createResponseChain({ entries: 0, characters: 1000 });
    chain.set('resp_a', linkOf('fix the build'));
    expect(chain.get('resp_a')).toBeUndefined();
  });
});
