/**
 * Workflow interceptors bundled with the workflow code when tracing is on (`workflowInterceptorModules`
 * in `src/worker.ts`; they double the bundle, so a worker without tracing leaves them out): OpenTelemetry spans for the workflow run, its signals, Updates, queries and
 * the activities it schedules, continuing the trace context the client put in the headers. The
 * spans leave the sandbox through the worker's `exporter` sink (see `src/observability/worker.ts`).
 * Deterministic: no I/O here; the interceptors only add span bookkeeping and headers.
 */
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow/index.js';
import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
