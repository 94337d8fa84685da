/**
 * Metric labels stay bounded and never carry a URL, a key or a job ID; the worker's log records
 * are JSON without task tokens or credentials; configuration of ports and trace export is
 * validated.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { JOB_STATES } from '../../src/model/states.js';
import { logRecord } from '../../src/observability/logging.js';
import {
  endpointTemplate,
  recordProviderRequest,
  recordTransition,
  setJobCountSource,
  recordWebhookDelivery,
  registry,
  resetMetrics,
  setKnownProviders,
  withProviderLabel,
} from '../../src/observability/metrics.js';

const SECRET = 'sk-live-0123456789abcdef';

describe('metrics', () => {
  it('endpoint templates drop host, query and identifiers', () => {
    expect(endpointTemplate('get', `https://api.example.com/api/jobs/job_8f2a9c?token=${SECRET}`)).toBe(
      'GET /api/jobs/:id',
    );
    expect(endpointTemplate('POST', 'https://api.example.com/api/scrape')).toBe('POST /api/scrape');
    expect(
      endpointTemplate('DELETE', 'https://api.example.com/v2/crawl/3fa85f64-5717-4562-b3fc-2c963f66afa6/cancel'),
    ).toBe('DELETE /:id/crawl/:id/cancel');
    expect(endpointTemplate('GET', 'not a url')).toBe('GET /');
  });

  it('labels carry no URL, key or job ID, and unknown names collapse to "other"', async () => {
    resetMetrics();
    setKnownProviders(['reference']);
    withProviderLabel('reference', () =>
      recordProviderRequest({
        method: 'GET',
        url: `https://p.example/api/jobs/scrape:acme:order-42?api_key=${SECRET}`,
        status: 429,
        ms: 12,
      }),
    );
    recordProviderRequest({
      provider: 'https://evil.example/?k=1',
      method: 'POST',
      url: 'https://p.example/api/scrape',
      ms: 5,
    });
    recordTransition('pending');
    recordTransition('scrape:acme:order-42');
    recordWebhookDelivery('reference', 'woken');
    recordWebhookDelivery('attacker-chosen-provider-name', 'Job scrape:acme:1');
    const text = await registry.metrics();
    const labels = [...text.matchAll(/\{([^}]*)\}/g)].map((m) => m[1]).join('\n');
    expect(labels).not.toMatch(/https?:|scrape:acme|order-42|evil|attacker/);
    expect(text).not.toContain(SECRET);
    expect(text).toContain(
      'scrape_provider_requests_total{provider="reference",endpoint="GET /api/jobs/:id",status_code="429"} 1',
    );
    expect(text).toContain('scrape_provider_rate_limited_total{provider="reference"} 1');
    expect(text).toContain(
      'scrape_provider_requests_total{provider="other",endpoint="POST /api/scrape",status_code="network"} 1',
    );
    expect(text).toContain('scrape_job_transitions_total{state="other"} 1');
    expect(text).toContain('scrape_webhook_deliveries_total{provider="other",outcome="other"} 1');
  });

  it('every job state has its own series: a move into cancel_unconfirmed is counted as such, and the jobs gauge shows each state', async () => {
    resetMetrics();
    recordTransition('cancel_unconfirmed');
    setJobCountSource(async () => Object.fromEntries(JOB_STATES.map((s, i) => [s, i + 1])));
    try {
      const text = await registry.metrics();
      expect(text).toContain('scrape_job_transitions_total{state="cancel_unconfirmed"} 1');
      for (const [i, s] of JOB_STATES.entries()) expect(text).toContain(`scrape_jobs{state="${s}"} ${i + 1}`);
    } finally {
      setJobCountSource(undefined);
    }
  });
});

describe('worker log records', () => {
  it('are JSON objects without task tokens, with credentials redacted', () => {
    const rec = logRecord({
      level: 'WARN',
      message: `activity failed: Authorization: Bearer ${SECRET} task_token=TaskToken(CiQ5ZjU1Mjk=)`,
      timestampNanos: 1_700_000_000_000_000_000n,
      meta: {
        taskToken: 'CiQ5ZjU…',
        base64TaskToken: 'CiQ5ZjU…',
        activityType: 'checkStatus',
        apiKey: SECRET,
        url: `https://p.example/x?api_key=${SECRET}`,
      },
    });
    const line = JSON.stringify(rec);
    expect(rec).toMatchObject({ level: 'WARN', activityType: 'checkStatus', at: '2023-11-14T22:13:20.000Z' });
    expect(line).not.toMatch(/taskToken|CiQ5ZjU/i);
    expect(line).not.toContain(SECRET);
  });
});

describe('observability configuration', () => {
  const base = { providers: {} };
  it('validates ports and the OTLP endpoint, with environment overrides', () => {
    const c = parseConfig(
      { ...base, observability: { metrics: { workerPort: 9464, apiPort: 9465 } } },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel:4318', SCRAPE_API_METRICS_PORT: 'off' },
    );
    expect(c.observability.metrics).toMatchObject({ workerPort: 9464, apiPort: null, host: '127.0.0.1' });
    expect(c.observability.traces.otlpEndpoint).toBe('http://otel:4318/v1/traces');
    expect(() => parseConfig({ ...base, observability: { metrics: { workerPort: 70000 } } }, {})).toThrow(/workerPort/);
    expect(() => parseConfig({ ...base, observability: { traces: { otlpEndpoint: 'not a url' } } }, {})).toThrow(
      /otlpEndpoint/,
    );
    expect(() => parseConfig(base, { SCRAPE_WORKER_METRICS_PORT: 'eighty' })).toThrow(/SCRAPE_WORKER_METRICS_PORT/);
    expect(parseConfig(base, {}).codec.enabled).toBe(false);
    expect(parseConfig(base, { SCRAPE_CODEC: 'on' }).codec.enabled).toBe(true);
  });
});
