/**
 * One trace from the HTTP API's `POST /v1/scrapes` through the workflow to the provider calls:
 * the API's request span is the root; the client's StartWorkflow, the worker's RunWorkflow, the
 * activities' StartActivity/RunActivity and the provider HTTP spans all belong to its trace, in
 * parent order. Spans go to an in-memory exporter (the same processor path as OTLP export); the
 * provider spans carry the URL without credentials.
 *
 * The workflow's spans reach the exporter through the worker's sink, after the workflow's last
 * activation, which comes after the activity has written the result: the test waits for the
 * workflow to close and then for every span it asserts (flushing the provider on each look), as
 * long as that takes on a busy machine, instead of reading the exporter once after a fixed pause.
 */
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObservabilityConfigSchema } from '../../src/observability/config.js';
import { installTracing } from '../../src/observability/tracing.js';
import { fixturePageNames, startPageServer, type PageServer } from '../helpers/pages.js';
import { API_KEYS, startApiStack, type ApiStack } from '../helpers/api.js';
import { KEYS, waitFor, waitForState } from '../helpers/stack.js';

const exporter = new InMemorySpanExporter();
const tracing = installTracing(ObservabilityConfigSchema.parse({}).traces, 'test', exporter)!;

/** Span names (prefixes) that the trace of one `POST /v1/scrapes` must contain. */
const EXPECTED = [
  'POST /v1/scrapes',
  'StartWorkflow:',
  'RunWorkflow:',
  'StartActivity:',
  'RunActivity:',
  'provider POST /api/scrape',
  'provider GET /api/jobs/:id',
];

/** The finished spans of the trace whose root is the API's request span, once it has every {@link EXPECTED} span. */
async function traceOfRequest(timeoutMs: number): Promise<ReadableSpan[]> {
  let seen: string[] = [];
  try {
    return await waitFor(
      async () => {
        await tracing.provider.forceFlush();
        const spans = exporter.getFinishedSpans();
        seen = [...new Set(spans.map((s) => s.name))];
        const root = spans.find((s) => s.name === 'POST /v1/scrapes');
        if (!root) return undefined;
        const trace = spans.filter((s) => s.spanContext().traceId === root.spanContext().traceId);
        return EXPECTED.every((p) => trace.some((s) => s.name.startsWith(p))) ? trace : undefined;
      },
      timeoutMs,
      'the spans of the trace',
    );
  } catch (e) {
    throw new Error(`${(e as Error).message}; spans exported: ${seen.join(', ')}`);
  }
}

let api: ApiStack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  api = await startApiStack({ profile: { minRunMs: 300 } });
});

afterAll(async () => {
  await api?.stop();
  await pages?.close();
});

describe('tracing', () => {
  it('one trace from POST /v1/scrapes through the workflow to the provider calls', async () => {
    const res = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: pages.pageUrl(fixturePageNames()[0]!), policy: { initialDelayMs: 200 } },
      headers: { 'idempotency-key': 'trace-1' },
    });
    expect(res.status).toBe(202);
    const { job_id: jobId } = (await res.json()) as { job_id: string };
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
    const stored = Date.now();
    await api.stack.temporal.workflow.getHandle(jobId).result(); // its last activation, then the sink

    const trace = await traceOfRequest(60_000);
    console.log(
      `every span of the trace was exported ${Date.now() - stored} ms after the store showed the job completed`,
    );
    const root = trace.find((s) => s.name === 'POST /v1/scrapes');
    const names = trace.map((s) => s.name);
    // Span names carry the workflow and activity types (`RunWorkflow:<type>`, `RunActivity:<type>`).
    for (const prefix of EXPECTED)
      expect(
        names.some((n) => n.startsWith(prefix)),
        `${prefix} in ${names.join(', ')}`,
      ).toBe(true);
    const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
    const ancestors = (s: ReadableSpan): string[] => {
      const out: string[] = [];
      for (
        let p = s.parentSpanId ? byId.get(s.parentSpanId) : undefined;
        p;
        p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined
      )
        out.push(p.name);
      return out;
    };
    const providerSubmit = trace.find((s) => s.name === 'provider POST /api/scrape')!;
    const chain = ancestors(providerSubmit).map((n) => n.split(':')[0]);
    // provider call ← RunActivity ← StartActivity ← RunWorkflow ← StartWorkflow ← POST /v1/scrapes
    expect(chain).toEqual(['RunActivity', 'StartActivity', 'RunWorkflow', 'StartWorkflow', 'POST /v1/scrapes']);
    expect(root!.parentSpanId).toBeUndefined();
    expect(providerSubmit.attributes['http.response.status_code']).toBe(202);
    const recorded = JSON.stringify(trace.map((s) => ({ n: s.name, a: s.attributes, e: s.events })));
    for (const k of [...Object.values(KEYS), ...Object.values(API_KEYS)]) expect(recorded).not.toContain(k);
  }, 120_000);
});
