import { context, INVALID_SPAN_CONTEXT, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { Request, Response } from 'express';
import type { FormatName } from '../src/index.js';
import type { RoutedDecision } from './task-router.js';

/** The provider names GenAI semantic conventions use for each API format. */
const GEN_AI_SYSTEM: Readonly<Record<FormatName, string>> = { 'openai-chat': 'openai', 'openai-responses': 'openai', anthropic: 'anthropic' };

/**
 * Starts the span of one routed request, a child of the client's W3C `traceparent` when it sent one,
 * and puts the span's own context on the request headers so the upstream continues the trace. It ends
 * when the response closes. Through @opentelemetry/api alone: without an SDK registered by the host
 * application every call is a no-op and the headers stay as they came.
 */
export function startRequestSpan(req: Request, res: Response, format: FormatName, model: unknown): Span {
  try {
    return startSpan(req, res, format, model);
  } catch {
    // A tracing SDK that throws must not fail routing: the request goes on untraced.
    return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
  }
}

function startSpan(req: Request, res: Response, format: FormatName, model: unknown): Span {
  const parent = propagation.extract(context.active(), req.headers);
  const span = trace.getTracer('task-router').startSpan('task-router route', {
    kind: SpanKind.SERVER,
    attributes: {
      'gen_ai.operation.name': 'chat',
      'gen_ai.system': GEN_AI_SYSTEM[format],
      ...(typeof model === 'string' ? { 'gen_ai.request.model': model.slice(0, 128) } : {}),
    },
  }, parent);
  propagation.inject(trace.setSpan(parent, span), req.headers);
  res.once('close', () => {
    span.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500 || !res.writableFinished) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
  return span;
}

/** The decision as span attributes: closed sets and numbers, never message text. */
export function decisionAttributes(decision: RoutedDecision): Attributes {
  return {
    'task_router.decision_id': decision.id,
    'task_router.mode': decision.mode,
    'task_router.route': decision.route,
    'task_router.routing': decision.routing,
    'task_router.step': decision.step,
    'task_router.confidence': decision.confidence,
    'task_router.score': decision.score,
    'task_router.unsure': decision.unsure,
    'task_router.stripped': [...decision.stripped],
  };
}
