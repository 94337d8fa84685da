/**
 * The `zyte` adapter against a real loopback Jobs API whose `run.json` answers a 2xx that is not
 * Zyte's own (a proxy's HTML page, an empty or cut body, JSON without `status`). Only a
 * `{"status": "error"|"badrequest"}` body is Zyte refusing the job; any other 2xx we cannot read
 * may come from a server that scheduled the job, so the submit is ambiguous (reconciled by our
 * tag), never a permanent refusal that fails the job while the Scrapy Cloud job runs and bills.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/shared/errors.js';
import type { SubmitContext } from '../../src/providers/adapter.js';
import { ZyteAdapter, zyteProvider } from '../../src/providers/zyte/index.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';

/** What the server answers to `run.json`, by the URL's path under `/as/<name>/`. */
const ANSWERS: Record<string, { type: string; body: string }> = {
  html: { type: 'text/html', body: '<html><body><h1>200 OK</h1>Request accepted</body></html>' },
  empty: { type: 'application/json', body: '' },
  cut: { type: 'application/json', body: '{"status": "ok", "jobid": "123/1/' },
  nostatus: { type: 'application/json', body: '{"jobid": "123/1/7"}' },
};

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    const name = /^\/as\/([a-z]+)\//.exec(req.url ?? '')?.[1] ?? '';
    const a = ANSWERS[name] ?? { type: 'application/json', body: '{"status": "error", "message": "unexpected"}' };
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': a.type });
      res.end(a.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => new Promise<void>((r) => server?.close(() => r())));

function adapter(name: string): ZyteAdapter {
  const entry = zyteProvider.entrySchema.parse({
    kind: 'zyte',
    credentials: {},
    baseUrl: `${base}/as/${name}`,
    storageUrl: `${base}/storage`,
    project: 123,
    spider: 'quotes',
  });
  return new ZyteAdapter('zyte', entry);
}

const submitCtx = (ref: string): SubmitContext => ({
  apiKey: FIXTURE_KEYS.acme,
  secrets: [],
  idempotencyKey: ref,
  clientRef: ref,
});

describe('zyte: a 2xx run.json answer that is not Zyte’s', () => {
  for (const name of Object.keys(ANSWERS)) {
    it(`${name}: the submit is ambiguous (the job may exist), never a permanent refusal`, async () => {
      let err: unknown;
      try {
        await adapter(name).submit(
          { url: `https://q.example/${name}`, format: 'markdown', options: {} },
          submitCtx(`ref-${name}`),
        );
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ProviderError);
      expect((err as ProviderError).kind).toBe('ambiguous');
      expect((err as ProviderError).details.httpStatus).toBe(200);
    });
  }
});
