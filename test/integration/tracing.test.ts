/**
 * One trace from the HTTP API's `POST /v1/scrapes` through the workflow to the provider calls:
 * the API's request span is the root; the client's StartWorkflow, the worker's RunWorkflow, the
 * activities' StartActivity/RunActivity and the provider HTTP spans all belong to its trace, in
 * parent order. Spans go to an in-memory exporter (the same processor path as OTLP export); the
 * provider spans carry the URL without credentials.
 */
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObservabilityConfigSchema } from '../../src/observability/config.js';
import { installTracing } from '../../src/observability/tracing.js';
import { listCorpusPages, startPageServer, type PageServer } from '../../src/sim/pageServer.js';
import { API_KEYS, startApiStack, type ApiStack } from '../helpers/api.js';
import { KEYS, waitForState } from '../helpers/stack.js';

const exporter = new InMemorySpanExporter();
installTracing(ObservabilityConfigSchema.parse({}).traces, 'test', exporter);

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
    const res = await api.call('acme', 'POST', '/v1/scrapes', { json: { url: pages.pageUrl(listCorpusPages(pages.pagesDir)[0]!), policy: { initialDelayMs: 200 } }, headers: { 'idempotency-key': 'trace-1' } });
    expect(res.status).toBe(202);
    const { job_id: jobId } = (await res.json()) as { job_id: string };
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
    await new Promise((r) => setTimeout(r, 1_500)); // the workflow's spans arrive through the sink at the end of its activations

    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'POST /v1/scrapes');
    expect(root, `spans: ${[...new Set(spans.map((s) => s.name))].join(', ')}`).toBeDefined();
    const trace = spans.filter((s) => s.spanContext().traceId === root!.spanContext().traceId);
    const names = trace.map((s) => s.name);
    // Span names carry the workflow and activity types (`RunWorkflow:<type>`, `RunActivity:<type>`).
    for (const prefix of ['StartWorkflow:', 'RunWorkflow:', 'StartActivity:', 'RunActivity:', 'provider POST /api/scrape', 'provider GET /api/jobs/:id']) {
      expect(names.some((n) => n.startsWith(prefix)), `${prefix} in ${names.join(', ')}`).toBe(true);
    }
    const byId = new Map(trace.map((s) => [s.spanContext().spanId, s]));
    const ancestors = (s: ReadableSpan): string[] => {
      const out: string[] = [];
      for (let p = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; p; p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined) out.push(p.name);
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
