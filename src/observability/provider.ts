/**
 * Observation of one provider HTTP exchange: a client span (`provider GET /api/jobs/:id`, with the
 * sanitised URL — credentials removed — and the status code) and the request metrics. Called by
 * `providerFetch` (`src/providers/shared/exchange.ts`) around every exchange.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { sanitizeUrl } from '../lib/sanitize.js';
import { currentProviderLabel, endpointTemplate, recordProviderRequest } from './metrics.js';
import { tracer } from './tracing.js';

/** What is known of a request before it is sent. */
export interface ObservedRequest {
  method: string;
  url: string;
  phase: string;
  /** Secret values to remove from the recorded URL. */
  secrets: readonly string[];
}

/**
 * Runs `send` inside a span and records the exchange. `send` resolves with something that has a
 * `status` (the response) or throws (no answer, or an error carrying `httpStatus`).
 */
export async function observeProviderCall<T extends { status: number }>(
  req: ObservedRequest,
  send: () => Promise<T>,
): Promise<T> {
  const endpoint = endpointTemplate(req.method, req.url);
  const started = performance.now();
  return tracer().startActiveSpan(`provider ${endpoint}`, { kind: SpanKind.CLIENT }, async (span) => {
    // A span that records nothing (tracing off: the no-op tracer) is not given the attributes, so
    // that an untraced call does not sanitise its URL a second time for them.
    if (span.isRecording())
      span.setAttributes({
        'http.request.method': req.method,
        'url.full': sanitizeUrl(req.url, req.secrets),
        'url.template': endpoint.slice(endpoint.indexOf(' ') + 1),
        'scrape.phase': req.phase,
        'scrape.provider': currentProviderLabel() ?? 'unknown',
      });
    try {
      const res = await send();
      span.setAttribute('http.response.status_code', res.status);
      if (res.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${res.status}` });
      recordProviderRequest({
        method: req.method,
        url: req.url,
        endpoint,
        status: res.status,
        ms: performance.now() - started,
      });
      return res;
    } catch (e) {
      const status = (e as { httpStatus?: number }).httpStatus;
      span.setStatus({ code: SpanStatusCode.ERROR, message: (e as { kind?: string }).kind ?? 'error' });
      if (status) span.setAttribute('http.response.status_code', status);
      recordProviderRequest({ method: req.method, url: req.url, endpoint, status, ms: performance.now() - started });
      throw e;
    } finally {
      span.end();
    }
  });
}
