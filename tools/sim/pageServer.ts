/**
 * A loopback HTTP server of target pages for tests, benchmarks and demos, so that every scrape
 * goes through a real fetch. It serves a folder of real article pages (`<pagesDir>/<name>/source.html`,
 * stored as UTF-8: the tests' own pages or the whole corpus, which the tests obtain and pass in)
 * and a few pathological targets.
 *
 * Routes (GET):
 * - `/pages/<name>/` → the page, `text/html; charset=utf-8`.
 * - `/encoded/<encoding>/<name>/` → the page re-encoded in a legacy encoding (`shift_jis`, `gbk`,
 *   `windows-1252`, ... any label `TextDecoder` knows), its `<meta charset>` rewritten, served as
 *   plain `text/html` WITHOUT a charset parameter, so the client must sniff the meta tag.
 *   Characters the encoding lacks become numeric character references (same text once parsed).
 * - `/status/<code>` → a small HTML page answered with that HTTP status.
 * - `/redirect?to=<path-or-url>` → `302` to `to`.
 * - `/slow?ms=<ms>&to=<path>` → waits `ms` ms, then serves `to` (default a small page).
 * - `/hang` → never answers (until the server closes).
 * - `/reset` → destroys the connection.
 * - `/text` → a `text/plain` body.
 * Everything else → 404 HTML. Hits are counted per path (`hits`).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';

/** Options of {@link startPageServer}. */
export interface PageServerOptions {
  /** Directory of the pages (one folder per page with `source.html`). */
  pagesDir: string;
  /** Bind address (default 127.0.0.1). */
  host?: string;
}

/** A running page server. */
export interface PageServer {
  /** Base URL like `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** The corpus directory in use. */
  readonly pagesDir: string;
  /** Hits per request path (without query). */
  readonly hits: Map<string, number>;
  /** URL of a corpus page (`/pages/<name>/`). @throws Error when the page does not exist. */
  pageUrl(name: string): string;
  /** URL of a corpus page re-encoded in `encoding` (`/encoded/<encoding>/<name>/`). */
  encodedPageUrl(name: string, encoding: string): string;
  /** Stop and destroy every open connection (including `/hang`). */
  close(): Promise<void>;
}

/**
 * Names of every page in `pagesDir` (folders holding `source.html`), sorted.
 * @throws Error with a clear message when the directory is missing (tests must fail, not skip).
 */
export function listCorpusPages(pagesDir: string): string[] {
  if (!existsSync(pagesDir)) throw new Error(`page folder not found: ${pagesDir}`);
  return readdirSync(pagesDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(pagesDir, d.name, 'source.html')))
    .map((d) => d.name)
    .sort();
}

const encoderCache = new Map<string, Map<string, Buffer>>();

/**
 * Build an encoder table for a legacy encoding by inverting `TextDecoder` over every 1- and
 * 2-byte sequence (Node has no built-in legacy encoder).
 */
function encoderTable(encoding: string): Map<string, Buffer> {
  const cached = encoderCache.get(encoding);
  if (cached) return cached;
  const dec = new TextDecoder(encoding);
  const table = new Map<string, Buffer>();
  const tryAdd = (bytes: number[]): void => {
    const s = dec.decode(Uint8Array.from(bytes));
    if (s.includes('\uFFFD') || [...s].length !== 1 || table.has(s)) return;
    table.set(s, Buffer.from(bytes));
  };
  for (let b = 0x80; b <= 0xff; b++) tryAdd([b]);
  for (let lead = 0x81; lead <= 0xfe; lead++) {
    for (let trail = 0x40; trail <= 0xfe; trail++) tryAdd([lead, trail]);
  }
  encoderCache.set(encoding, table);
  return table;
}

/**
 * Encode `text` in a legacy `encoding`; characters it lacks become `&#x…;` references.
 * @throws RangeError for an encoding label `TextDecoder` does not know.
 */
export function encodeLegacy(text: string, encoding: string): Buffer {
  const table = encoderTable(encoding);
  const parts: Buffer[] = [];
  let ascii = '';
  const flush = (): void => {
    if (ascii) parts.push(Buffer.from(ascii, 'latin1'));
    ascii = '';
  };
  for (const ch of text) {
    const cp = ch.codePointAt(0) ?? 0;
    if (cp < 0x80) {
      ascii += ch;
      continue;
    }
    const bytes = table.get(ch);
    if (bytes) {
      flush();
      parts.push(bytes);
    } else {
      ascii += `&#x${cp.toString(16)};`;
    }
  }
  flush();
  return Buffer.concat(parts);
}

/** Replace the document's charset declarations with `<meta charset="label">` right after the doctype. */
export function relabelCharset(html: string, label: string): string {
  const stripped = html
    .replace(/<meta\s+charset\s*=\s*["']?[^"'\s>]+["']?\s*\/?>/gi, '')
    .replace(/<meta\s+http-equiv\s*=\s*["']?content-type["']?[^>]*>/gi, '')
    .replace(/^\uFEFF/, '');
  const meta = `<meta charset="${label}">`;
  const doctype = /^\s*<!doctype[^>]*>/i.exec(stripped);
  if (doctype) return doctype[0] + meta + stripped.slice(doctype[0].length);
  return meta + stripped;
}

/**
 * Start the page server on a random loopback port.
 * @throws Error when the page directory does not exist.
 */
export async function startPageServer(options: PageServerOptions): Promise<PageServer> {
  const { pagesDir } = options;
  if (!existsSync(pagesDir)) throw new Error(`page folder not found: ${pagesDir}`);
  const hits = new Map<string, number>();
  const sockets = new Set<Socket>();
  const pending = new Set<NodeJS.Timeout>();

  const readPage = (name: string): Buffer | undefined => {
    if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith('.')) return undefined;
    const file = path.join(pagesDir, name, 'source.html');
    return existsSync(file) ? readFileSync(file) : undefined;
  };

  const notFound = (res: ServerResponse): void => {
    res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Not found</title><p>Not found</p>');
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const u = new URL(req.url ?? '/', 'http://localhost');
    hits.set(u.pathname, (hits.get(u.pathname) ?? 0) + 1);
    let m: RegExpExecArray | null;

    if ((m = /^\/pages\/([^/]+)\/?$/.exec(u.pathname))) {
      const body = readPage(decodeURIComponent(m[1] ?? ''));
      if (!body) return notFound(res);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length });
      res.end(body);
      return;
    }
    if ((m = /^\/encoded\/([^/]+)\/([^/]+)\/?$/.exec(u.pathname))) {
      const encoding = decodeURIComponent(m[1] ?? '');
      const body = readPage(decodeURIComponent(m[2] ?? ''));
      if (!body) return notFound(res);
      let encoded: Buffer;
      try {
        encoded = encodeLegacy(relabelCharset(body.toString('utf8'), encoding), encoding);
      } catch {
        return notFound(res);
      }
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': encoded.length });
      res.end(encoded);
      return;
    }
    if ((m = /^\/status\/(\d{3})$/.exec(u.pathname))) {
      const code = Number(m[1]);
      res.writeHead(code, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        `<!doctype html><html lang="en"><head><title>Status ${code}</title></head><body><h1>Status ${code}</h1><p>This page answered with HTTP status ${code}. <a href="/pages/001/">home</a></p></body></html>`,
      );
      return;
    }
    if (u.pathname === '/redirect') {
      const to = u.searchParams.get('to') ?? '/pages/001/';
      res.writeHead(302, { location: to });
      res.end();
      return;
    }
    if (u.pathname === '/slow') {
      const ms = Number(u.searchParams.get('ms') ?? '1000');
      const to = u.searchParams.get('to');
      const t = setTimeout(
        () => {
          pending.delete(t);
          if (to) {
            res.writeHead(302, { location: to });
            res.end();
          } else {
            res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
            res.end(
              '<!doctype html><html><head><title>Slow page</title></head><body><p>Finally here.</p></body></html>',
            );
          }
        },
        Number.isFinite(ms) ? ms : 1000,
      );
      pending.add(t);
      return;
    }
    if (u.pathname === '/hang') return; // never answer
    if (u.pathname === '/reset') {
      req.socket.destroy();
      return;
    }
    if (u.pathname === '/text') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Plain   text\nbody.');
      return;
    }
    notFound(res);
  };

  const server: Server = createServer(handle);
  // Node closes an idle keep-alive socket after 5 s and tells the client so; on a loaded machine
  // the client's own timer fires late and it reuses sockets the server has already closed ("other
  // side closed"), one per retry when many idled together. Keeping them a minute makes that race
  // rare; `close()` still ends them at once (the sockets are destroyed below).
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, options.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${options.host ?? '127.0.0.1'}:${addr.port}`;

  return {
    url,
    pagesDir,
    hits,
    pageUrl(name: string): string {
      if (!readPage(name)) throw new Error(`no corpus page "${name}" in ${pagesDir}`);
      return `${url}/pages/${encodeURIComponent(name)}/`;
    },
    encodedPageUrl(name: string, encoding: string): string {
      if (!readPage(name)) throw new Error(`no corpus page "${name}" in ${pagesDir}`);
      return `${url}/encoded/${encodeURIComponent(encoding)}/${encodeURIComponent(name)}/`;
    },
    close(): Promise<void> {
      for (const t of pending) clearTimeout(t);
      pending.clear();
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
