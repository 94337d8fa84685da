/**
 * OpenTelemetry traces: one tracer provider per process, registered globally (async-local
 * context, W3C trace-context propagation), exporting over OTLP/HTTP when an endpoint is
 * configured, or to a given exporter (the tests' in-memory one). Temporal's interceptors
 * (`@temporalio/interceptors-opentelemetry`) carry the context from the client (the HTTP API's
 * request span) through the workflow (spans exported by the worker through a sink) to the
 * activities, where provider HTTP calls get spans of their own (`provider.ts`).
 */
import { SpanKind, SpanStatusCode, context, propagation, trace, type Context, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client/index.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ObservabilityConfig } from './config.js';

/** Installed tracing of this process. */
export interface Tracing {
  provider: NodeTracerProvider;
  /** Where spans go (also handed to the worker's workflow sink). */
  exporter: SpanExporter;
  resource: Resource;
  /** Flushes and stops the provider. */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

/** The tracer of our own spans (HTTP API requests, provider calls). */
export const tracer = () => trace.getTracer('scrape-orchestrator');

/**
 * Installs tracing once per process when `exporter` is given or `traces.otlpEndpoint` is set;
 * otherwise does nothing and returns undefined. A second call returns the first installation.
 * @param kind suffix of `service.name` (`worker`, `api`, …)
 */
export function installTracing(
  traces: ObservabilityConfig['traces'],
  kind: string,
  exporter?: SpanExporter,
): Tracing | undefined {
  if (installed) return installed;
  if (!exporter && !traces.otlpEndpoint) return undefined;
  const resource = new Resource({ [ATTR_SERVICE_NAME]: `${traces.serviceName}-${kind}` });
  const exp = exporter ?? new OTLPTraceExporter({ url: traces.otlpEndpoint });
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [exporter ? new SimpleSpanProcessor(exp) : new BatchSpanProcessor(exp)],
  });
  provider.register();
  installed = { provider, exporter: exp, resource, shutdown: () => provider.shutdown() };
  return installed;
}

/** The tracing installed in this process, if any. */
export function currentTracing(): Tracing | undefined {
  return installed;
}

/** Client interceptors that put the active trace context into workflow starts, signals, Updates and queries. */
export function workflowClientInterceptors() {
  return [new OpenTelemetryWorkflowClientInterceptor()];
}

const requestSpans = new WeakMap<FastifyRequest, { span: Span; ctx: Context }>();

/**
 * Gives every request of `app` a server span named by its route template (`POST /v1/scrapes`,
 * never a job ID), continuing a caller's `traceparent`, active while the handler runs (so that
 * the workflow it starts joins the trace). No headers or bodies are recorded. Does nothing when no
 * tracing is installed.
 */
export function traceRequests(app: FastifyInstance): void {
  if (!installed) return;
  app.addHook('onRequest', (req, _reply, done) => {
    const parent = propagation.extract(context.active(), req.headers);
    const name = `${req.method} ${req.routeOptions.url ?? 'unknown route'}`;
    const span = tracer().startSpan(
      name,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'http.route': req.routeOptions.url ?? '' },
      },
      parent,
    );
    requestSpans.set(req, { span, ctx: trace.setSpan(parent, span) });
    done();
  });
  app.addHook('preHandler', (req, _reply, done) => {
    const s = requestSpans.get(req);
    if (s) context.with(s.ctx, done);
    else done();
  });
  app.addHook('onResponse', (req, reply, done) => {
    const s = requestSpans.get(req);
    if (s) {
      s.span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) s.span.setStatus({ code: SpanStatusCode.ERROR });
      s.span.end();
    }
    done();
  });
}
