/**
 * What the worker adds for observability: activity interceptors (trace spans continuing the
 * workflow's context; per-activity metrics; the provider label of the activity's requests), the
 * workflow span exporter sink, and the path of the workflow interceptor module to bundle.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ExportResultCode } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Resource } from '@opentelemetry/resources';
import type { Context as ActivityContext } from '@temporalio/activity';
import {
  OpenTelemetryActivityInboundInterceptor,
  makeWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry/lib/worker/index.js';
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptors,
  InjectedSinks,
  Next,
} from '@temporalio/worker';
import { CancelledFailure, CompleteAsyncError } from '@temporalio/common';
import { recordActivity, withProviderLabel } from './metrics.js';
import { currentTracing } from './tracing.js';

/** Absolute path of `src/workflows/otelInterceptors` (TypeScript under tsx, JS under dist/). */
export function workflowInterceptorModule(): string {
  const ts = fileURLToPath(new URL('../workflows/otelInterceptors.ts', import.meta.url));
  return fs.existsSync(ts) ? ts : fileURLToPath(new URL('../workflows/otelInterceptors.js', import.meta.url));
}

/**
 * Records each activity attempt (`scrape_activity_*`) and labels its provider requests with the
 * input's `provider` (top level, or the `job` of workflow v2's submit activities).
 */
class MetricsActivityInterceptor implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: ActivityContext) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const started = performance.now();
    const first = input.args[0] as { provider?: unknown; job?: { provider?: unknown } } | undefined;
    const named = first?.provider ?? first?.job?.provider;
    const provider = typeof named === 'string' ? named : undefined;
    const type = this.ctx.info.activityType;
    try {
      const out = await withProviderLabel(provider, () => next(input));
      recordActivity(type, 'completed', performance.now() - started);
      return out;
    } catch (e) {
      const outcome =
        e instanceof CompleteAsyncError ? 'detached' : e instanceof CancelledFailure ? 'cancelled' : 'failed';
      recordActivity(type, outcome, performance.now() - started);
      throw e;
    }
  }
}

/** Activity interceptor factories: tracing (continues the workflow's span; only with tracing on) then metrics. */
export function activityInterceptors(opts: { tracing: boolean }): ((ctx: ActivityContext) => ActivityInterceptors)[] {
  const metrics = (ctx: ActivityContext) => ({ inbound: new MetricsActivityInterceptor(ctx) });
  return opts.tracing ? [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx) }), metrics] : [metrics];
}

const discard: SpanExporter = {
  export(_spans: ReadableSpan[], done) {
    done({ code: ExportResultCode.SUCCESS });
  },
  async shutdown() {},
};

/**
 * The `exporter` sink the workflow interceptors send their spans to: the process's tracing
 * exporter (the interceptors are bundled only when tracing is on; a sink that drops spans
 * otherwise, for a traced bundle run without an exporter).
 */
export function workflowSpanSinks(): InjectedSinks<Record<string, never>> {
  const t = currentTracing();
  return {
    exporter: makeWorkflowExporter(t?.exporter ?? discard, t?.resource ?? new Resource({})),
  } as unknown as InjectedSinks<Record<string, never>>;
}
