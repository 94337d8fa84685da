/**
 * Traces exported over OTLP/HTTP, as configured in production (`OTEL_EXPORTER_OTLP_ENDPOINT`):
 * a collector on loopback (a real HTTP server that speaks the OTLP/HTTP JSON encoding the
 * exporter sends, `POST /v1/traces`) receives the trace of one job — the HTTP API's request span,
 * the workflow's and activities' spans and the provider calls — under the configured service name,
 * with no credential in any exported byte. The span tree itself is checked in `tracing.test.ts`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { currentTracing, installTracing } from '../../src/observability/tracing.js';
import { fixturePageNames, startPageServer, type PageServer } from '../helpers/pages.js';
import { API_KEYS, startApiStack, type ApiStack } from '../helpers/api.js';
import { KEYS, waitForState } from '../helpers/stack.js';

/** What the collector received: raw bodies and the spans in them (OTLP JSON: `resourceSpans[].scopeSpans[].spans[]`). */
interface Received {
  bodies: string[];
  contentTypes: string[];
  spans: { service: string; traceId: string; name: string }[];
}

interface OtlpJson {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans?: { spans?: { traceId: string; name: string }[] }[];
  }[];
}

const received: Received = { bodies: [], contentTypes: [], spans: [] };
const collector = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    const body = Buffer.concat(chunks).toString('utf8');
    received.bodies.push(body);
    received.contentTypes.push(String(req.headers['content-type']));
    const doc = JSON.parse(body) as OtlpJson;
    for (const rs of doc.resourceSpans ?? []) {
      const service = rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? []) received.spans.push({ service, traceId: s.traceId, name: s.name });
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});

let api: ApiStack;
let pages: PageServer;

beforeAll(async () => {
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  // The environment a deployment sets; the configuration derives `<endpoint>/v1/traces` from it.
  const traces = parseConfig(
    { providers: {}, observability: { traces: { serviceName: 'otlp-test' } } },
    { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint },
  ).observability.traces;
  expect(traces.otlpEndpoint).toBe(`${endpoint}/v1/traces`);
  installTracing(traces, 'worker');
  pages = await startPageServer();
  api = await startApiStack({ profile: { minRunMs: 300 } });
});

afterAll(async () => {
  await api?.stop();
  await pages?.close();
  await currentTracing()?.shutdown();
  await new Promise((r) => collector.close(r));
});

describe('tracing over OTLP/HTTP', () => {
  it('a collector receives the whole trace of a job, from POST /v1/scrapes to the provider calls, without credentials', async () => {
    const res = await api.call('acme', 'POST', '/v1/scrapes', {
      json: { url: pages.pageUrl(fixturePageNames()[1]!), policy: { initialDelayMs: 200 } },
      headers: { 'idempotency-key': 'otlp-1' },
    });
    expect(res.status).toBe(202);
    const { job_id: jobId } = (await res.json()) as { job_id: string };
    await waitForState(api.stack.store, jobId, ['completed'], 60_000);
    await new Promise((r) => setTimeout(r, 1_500)); // the workflow's spans arrive through the sink at the end of its activations
    await currentTracing()!.provider.forceFlush(); // the batch processor exports now rather than on its timer

    expect(received.bodies.length).toBeGreaterThan(0);
    expect(new Set(received.contentTypes)).toEqual(new Set(['application/json']));
    const root = received.spans.find((s) => s.name === 'POST /v1/scrapes');
    expect(root, `spans: ${[...new Set(received.spans.map((s) => s.name))].join(', ')}`).toBeDefined();
    expect(root!.service).toBe('otlp-test-worker');
    const names = received.spans.filter((s) => s.traceId === root!.traceId).map((s) => s.name);
    for (const prefix of [
      'StartWorkflow:',
      'RunWorkflow:',
      'RunActivity:',
      'provider POST /api/scrape',
      'provider GET /api/jobs/:id',
    ]) {
      expect(
        names.some((n) => n.startsWith(prefix)),
        `${prefix} in ${names.join(', ')}`,
      ).toBe(true);
    }
    const exported = received.bodies.join('\n');
    for (const k of [...Object.values(KEYS), ...Object.values(API_KEYS)]) expect(exported).not.toContain(k);
  }, 120_000);
});
