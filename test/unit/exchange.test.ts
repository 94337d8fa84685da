/**
 * One provider exchange (`src/providers/shared/exchange.ts`) against a real loopback HTTP server:
 * a call that outlives its HTTP timeout is a `TIMEOUT`, a call its caller cancels says so, and a
 * long-lived caller signal (a tracking loop's, which lives for the job's whole wait) keeps no
 * listener of the calls it has made, however many.
 */
import { getEventListeners } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { providerFetch, type ProviderRequest } from '../../src/providers/shared/exchange.js';

let server: Server;
let base: string;

beforeAll(async () => {
  // `/slow` never answers (until the client gives up); anything else answers at once.
  server = createServer((req, res) => {
    if (req.url === '/slow') return;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'running' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/**
 * Signals composed from `signal` by `AbortSignal.any` that it still holds: Node keeps them in a set
 * on each source signal (its `kDependantSignals` symbol), one per composed signal, pruned only
 * when the source aborts. 0 where Node has no such set.
 */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => String(s) === 'Symbol(kDependantSignals)');
  const set = key ? (signal as unknown as Record<symbol, Set<unknown> | undefined>)[key] : undefined;
  return set?.size ?? 0;
}

const request = (path: string, over: Partial<ProviderRequest> = {}): ProviderRequest => ({
  method: 'GET',
  url: `${base}${path}`,
  timeoutMs: 5_000,
  phase: 'read',
  secrets: [],
  ...over,
});

describe('providerFetch', () => {
  it('a long-lived caller signal holds no listener of the calls made under it', async () => {
    const loop = new AbortController();
    for (let i = 0; i < 50; i++) {
      const res = await providerFetch(request('/status', { signal: loop.signal }));
      expect(res.status).toBe(200);
    }
    expect(getEventListeners(loop.signal, 'abort')).toHaveLength(0);
    expect(dependants(loop.signal)).toBe(0);
  });

  it('a call past its HTTP timeout fails as a TIMEOUT; a call its caller cancels fails as cancelled', async () => {
    const timedOut = await providerFetch(request('/slow', { timeoutMs: 200 })).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(ProviderError);
    expect((timedOut as ProviderError).details.code).toBe('TIMEOUT');
    expect((timedOut as ProviderError).message).toContain('timed out after 200 ms');

    const caller = new AbortController();
    const pending = providerFetch(request('/slow', { signal: caller.signal })).catch((e: unknown) => e);
    setImmediate(() => caller.abort('the job was cancelled'));
    const cancelled = (await pending) as ProviderError;
    expect(cancelled).toBeInstanceOf(ProviderError);
    expect(cancelled.message).toContain('was cancelled');
    expect(cancelled.kind).toBe('transient');
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});
