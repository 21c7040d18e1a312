import { propagation, trace } from '@opentelemetry/api';
import { gatewayAndUpstream } from '../support/suite.js';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, describe, expect, it } from 'vitest';
import type { FakeUpstream, TestGateway } from '../support/fake-upstream.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

let upstream: FakeUpstream;
let gateway: TestGateway;

gatewayAndUpstream((made) => ({ gateway, upstream } = made));
afterAll(() => {
  trace.disable();
  propagation.disable();
});

async function chat(headers: Record<string, string> = {}): Promise<Response> {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'fix the failing test in src/app.ts' }] }),
  });
  await response.arrayBuffer();
  return response;
}

describe('tracing through @opentelemetry/api', () => {
  it('without an SDK it does nothing: the client traceparent reaches the upstream unchanged', async () => {
    const traceparent = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;
    await chat({ traceparent });
    expect(upstream.last().headers.traceparent).toBe(traceparent);
  });

  it('with an SDK: one span per routed request, child of the client traceparent, with the decision as attributes, continued upstream', async () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const response = await chat({ traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` });
    for (let wait = 0; wait < 100 && exporter.getFinishedSpans().length === 0; wait += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    const [span, ...more] = exporter.getFinishedSpans();
    expect(more).toEqual([]);
    expect(span?.name).toBe('task-router route');
    expect(span?.spanContext().traceId).toBe(TRACE_ID);
    expect(span?.parentSpanContext?.spanId).toBe(CLIENT_SPAN);
    expect(span?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': 'openai',
      'gen_ai.request.model': 'gpt-test',
      'task_router.mode': 'ACTION',
      'task_router.route': 'action',
      'task_router.decision_id': response.headers.get('x-task-router-decision-id'),
      'http.response.status_code': 200,
    });
    // The upstream continues the trace from our span.
    expect(upstream.last().headers.traceparent).toBe(`00-${TRACE_ID}-${span?.spanContext().spanId}-01`);
  });
});
