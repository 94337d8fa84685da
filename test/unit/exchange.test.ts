/**
 * One provider exchange (`src/providers/shared/exchange.ts`) against a real loopback HTTP server:
 * a call that outlives its HTTP timeout is a `TIMEOUT`, a call its caller cancels says so, and a
 * long-lived caller signal (a tracking loop's, which lives for the job's whole wait) keeps no
 * listener of the calls it has made, however many. A body longer than the call's cap is not read
 * whole: the call fails `BODY_TOO_LARGE` (`ambiguous` on a submit) and the server sees the
 * connection closed before its body was all sent. A body sent one byte per chunk (every multi-byte
 * UTF-8 character split across chunks) reads as the same text as whole.
 */
import { getEventListeners } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultContext } from '../../src/providers/adapter.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import { providerFetch, readCapped, type ProviderRequest } from '../../src/providers/shared/exchange.js';
import { ProviderHttp } from '../../src/providers/shared/http.js';

let server: Server;
let base: string;

const MiB = 1024 * 1024;

/** A JSON object of exactly `bytes` bytes (at least 12): `{"pad":"xxx…"}`. */
const jsonOf = (bytes: number) => `{"pad":"${'x'.repeat(bytes - 10)}"}`;

/** How each `/stream` answer ended: `sent` bytes written, `whole` when the body was all sent. */
const streamed: { sent: number; whole: boolean }[] = [];
/** Resolves when the next `/stream` answer ends (sent whole or its connection closed). */
let streamEnded: Promise<void> = Promise.resolve();

/**
 * Writes a JSON body of `bytes` bytes in 64 KiB chunks with no content-length (chunked), waiting
 * for the client to drain each, and records how far it got once the response closes.
 */
function stream(res: ServerResponse, bytes: number, ended: () => void): void {
  res.setHeader('content-type', 'application/json');
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let sent = 0;
  res.on('close', () => {
    streamed.push({ sent, whole: res.writableFinished });
    ended();
  });
  const pump = () => {
    if (sent === 0) {
      res.write('{"pad":"');
      sent += 8;
    }
    while (!res.destroyed && sent < bytes - 2) {
      const part = chunk.subarray(0, Math.min(chunk.length, bytes - 2 - sent));
      sent += part.length;
      if (!res.write(part)) return void res.once('drain', pump);
    }
    if (!res.destroyed) {
      sent += 2;
      res.end('"}');
    }
  };
  pump();
}

/** The text of the `/bytes?n=` bodies: a BOM, then 2-, 3- and 4-byte UTF-8 characters in JSON. */
const SPLIT_TEXT = '{"s":"é€😀ß—𝄞"}';
/** `/bytes?n=0`: {@link SPLIT_TEXT} after a BOM; `/bytes?n=1`: the same cut inside its last character. */
const BYTE_BODIES = [
  Buffer.concat([Buffer.of(0xef, 0xbb, 0xbf), Buffer.from(SPLIT_TEXT)]),
  Buffer.from(SPLIT_TEXT).subarray(0, Buffer.byteLength(SPLIT_TEXT) - 4),
];

beforeAll(async () => {
  // `/slow` never answers (until the client gives up); `/sized?bytes=N` answers a JSON body of N
  // bytes with its content-length; `/stream?bytes=N` streams one (see `stream`); `/bytes?n=N`
  // sends `BYTE_BODIES[N]` one byte per chunk; anything else
  // answers at once.
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const bytes = Number(url.searchParams.get('bytes'));
    if (url.pathname === '/slow') return;
    if (url.pathname === '/sized') {
      res.setHeader('content-type', 'application/json');
      return void res.end(jsonOf(bytes));
    }
    if (url.pathname === '/bytes') {
      // One HTTP chunk per byte of `BYTE_BODIES[n]`, each written once the previous one is flushed.
      res.setHeader('content-type', 'application/json');
      const body = BYTE_BODIES[Number(url.searchParams.get('n'))] ?? Buffer.alloc(0);
      let i = 0;
      const next = (): void => {
        if (i >= body.length) return void res.end();
        res.write(body.subarray(i, ++i), () => setImmediate(next));
      };
      return next();
    }
    if (url.pathname === '/stream') {
      let ended!: () => void;
      streamEnded = new Promise((r) => (ended = r));
      return stream(res, bytes, ended);
    }
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

/** A response whose body stream hands over `bytes` one byte per chunk (headers: `headers`). */
function byteByByte(bytes: Uint8Array, headers: Record<string, string> = {}): Response {
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < bytes.length) c.enqueue(bytes.subarray(i, ++i));
      else c.close();
    },
  });
  return new Response(body, { headers });
}

describe('the body text', () => {
  it('readCapped decodes characters split across chunks whole, drops a BOM, and ends a cut character with U+FFFD', async () => {
    expect(await readCapped(byteByByte(BYTE_BODIES[0]!), MiB)).toBe(SPLIT_TEXT);
    expect(await readCapped(byteByByte(BYTE_BODIES[1]!), MiB)).toBe(`${SPLIT_TEXT.slice(0, -4)}\uFFFD`);
    // The cap counts bytes, not characters: a body of exactly `cap` bytes is read, one more is cut.
    const bytes = BYTE_BODIES[0]!.length;
    expect(await readCapped(byteByByte(BYTE_BODIES[0]!), bytes)).toBe(SPLIT_TEXT);
    const cut = await readCapped(byteByByte(BYTE_BODIES[0]!), bytes - 1).catch((e: unknown) => e);
    expect(cut).toMatchObject({ read: bytes, declared: undefined });
    const refused = await readCapped(byteByByte(BYTE_BODIES[0]!, { 'content-length': String(bytes) }), bytes - 1).catch(
      (e: unknown) => e,
    );
    expect(refused).toMatchObject({ read: 0, declared: bytes });
  });

  it('a body whose multi-byte characters arrive split across chunks reads as the same text, BOM dropped', async () => {
    const res = await providerFetch(request('/bytes?n=0'));
    expect(res.text).toBe(SPLIT_TEXT);
    expect(res.body).toEqual({ s: 'é€😀ß—𝄞' });

    // A body cut inside a character ends with one replacement character, as `Response.text()` does.
    const cut = await providerFetch(request('/bytes?n=1'));
    expect(cut.text).toBe(`${SPLIT_TEXT.slice(0, -4)}\uFFFD`);
    expect(cut.text).toBe(await new Response(BYTE_BODIES[1]).text());
    expect(cut.body).toBeUndefined();
  });
});

describe('the body cap', () => {
  it('a body at the cap is read and parsed; one byte more fails BODY_TOO_LARGE without the body as evidence', async () => {
    const atCap = await providerFetch(request(`/sized?bytes=${MiB}`, { maxBodyBytes: MiB }));
    expect(atCap.status).toBe(200);
    expect((atCap.body as { pad: string }).pad).toHaveLength(MiB - 10);

    const over = await providerFetch(request(`/sized?bytes=${MiB + 1}`, { maxBodyBytes: MiB })).catch(
      (e: unknown) => e,
    );
    expect(over).toBeInstanceOf(ProviderError);
    const err = over as ProviderError;
    expect(err.kind).toBe('transient');
    expect(err.details.code).toBe('BODY_TOO_LARGE');
    expect(err.message).toContain(`GET ${base}/sized?bytes=${MiB + 1}`);
    expect(err.message).toContain(`over the cap of ${MiB} bytes`);
    expect(err.message).toContain(`content-length ${MiB + 1}, cut before reading`);
    expect(err.details.httpStatus).toBe(200);
    expect(err.details.evidence?.body).toBeUndefined();
    expect(err.details.evidence?.endpoint).toBe(`GET ${base}/sized?bytes=${MiB + 1}`);
  });

  it('a streamed body past the cap is cut: the rest is never read, a read fails transient and a submit ambiguous', async () => {
    const under = await providerFetch(request(`/stream?bytes=${2 * MiB - 1}`, { maxBodyBytes: 2 * MiB }));
    expect((under.body as { pad: string }).pad).toHaveLength(2 * MiB - 11);
    await streamEnded;
    expect(streamed.at(-1)).toEqual({ sent: 2 * MiB - 1, whole: true });

    for (const [phase, kind] of [
      ['read', 'transient'],
      ['cancel', 'transient'],
      ['submit', 'ambiguous'],
    ] as const) {
      const cut = await providerFetch(
        request(`/stream?bytes=${64 * MiB}`, {
          maxBodyBytes: 2 * MiB,
          phase,
          method: phase === 'read' ? 'GET' : 'POST',
        }),
      ).catch((e: unknown) => e);
      expect(cut).toBeInstanceOf(ProviderError);
      expect((cut as ProviderError).kind).toBe(kind);
      expect((cut as ProviderError).details.code).toBe('BODY_TOO_LARGE');
      expect((cut as ProviderError).message).toMatch(/over the cap of 2097152 bytes .*\(cut after \d+ bytes read\)/);
      expect((cut as ProviderError).details.evidence?.body).toBeUndefined();
      // The server saw the connection closed long before its 64 MiB were sent.
      await streamEnded;
      expect(streamed.at(-1)?.whole).toBe(false);
      expect(streamed.at(-1)?.sent).toBeLessThan(32 * MiB);
    }
  });

  it("a provider client's result read is allowed the entry's results.maxBytes when larger than the client's cap", async () => {
    const http = new ProviderHttp({
      provider: 'acme',
      baseUrl: base,
      auth: { in: 'header' },
      submitTimeoutMs: 5_000,
      readTimeoutMs: 5_000,
      maxBodyBytes: MiB,
    });
    const call = { method: 'GET', path: '/sized', query: { bytes: 2 * MiB }, phase: 'read' } as const;
    const plain = await http.call({ apiKey: 'k', secrets: [] }, call).catch((e: unknown) => e);
    expect((plain as ProviderError).details.code).toBe('BODY_TOO_LARGE');
    const resultCtx: Pick<ResultContext, 'apiKey' | 'secrets' | 'limits'> = {
      apiKey: 'k',
      secrets: [],
      limits: { maxDocuments: 10, maxBytes: 3 * MiB, pageSize: 10 },
    };
    const page = await http.call(resultCtx, call);
    expect((page.body as { pad: string }).pad).toHaveLength(2 * MiB - 10);
  });
});
