/**
 * A loopback HTTP server that answers every request with a canned answer: for adapter tests that
 * feed a provider kind answers a real provider (or a proxy in front of it) could give. Registers
 * its own `beforeAll`/`afterAll` in the calling test file.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll } from 'vitest';

/** One answer: HTTP status (default 200), `content-type` (default `application/json`) and body text. */
export interface CannedAnswer {
  status?: number;
  type?: string;
  body: string;
}

/**
 * Serves `answerOf(req)` (after reading the request's body) on 127.0.0.1 for the calling file's
 * tests. Returns the server's base URL (`http://127.0.0.1:<port>`), readable once the file's
 * `beforeAll` has run.
 */
export function serveCannedAnswers(answerOf: (req: IncomingMessage) => CannedAnswer): () => string {
  let server: Server | undefined;
  let base = '';
  beforeAll(async () => {
    const s = createServer((req, res) => {
      const a = answerOf(req);
      req.resume();
      req.on('end', () => {
        res.writeHead(a.status ?? 200, { 'content-type': a.type ?? 'application/json' });
        res.end(a.body);
      });
    });
    server = s;
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(s.address() as { port: number }).port}`;
  });
  afterAll(async () => new Promise<void>((r) => (server ? server.close(() => r()) : r())));
  return () => base;
}
