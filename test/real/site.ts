/**
 * The pages the real servers crawl, served on loopback the way the demo serves them (Fastify with
 * `@fastify/static` over the repository's `sample-site/`), at `127.0.0.10`: Firecrawl's URL check
 * refuses the literal host `127.0.0.1`, and Linux answers every 127.0.0.0/8 address without setup.
 *
 * Routes beside the sample site (every page plain HTML, same host):
 * - `/slow/` then `/slow/<i>`: a chain of `slowPages` pages, each answered after `slowMs` and
 *   linking only to the next, so a crawl of `/slow/` runs one page after another for a predictable
 *   while (a cancel, a worker kill or a server restart lands while it runs);
 * - `/large/`: an index linking to `largePages` pages `/large/<i>`, each with about `largeKiB` KiB
 *   of text, so a crawl's documents together pass Firecrawl's 10 MiB page of results.
 * It counts the requests it is answering (`inFlight`) and the pages it served (`served`).
 */
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import Fastify from 'fastify';
import { REPO } from '../helpers/stack.js';

/** Options of {@link startSite}. */
export interface SiteOptions {
  /** Pages of the `/slow/` chain (default 12) and how long each takes to answer, ms (default 1500). */
  slowPages?: number;
  slowMs?: number;
  /** Pages under `/large/` (default 120) and KiB of text on each (default 96). */
  largePages?: number;
  largeKiB?: number;
}

/** A running site. */
export interface Site {
  /** `http://127.0.0.10:<port>` (no trailing slash). */
  url: string;
  /** Requests being answered now. */
  inFlight(): number;
  /** Paths served (2xx), in order. */
  served: string[];
  close(): Promise<void>;
}

const WORDS = (
  'accepted done poll politely one key job write once cancel request lost acceptance provider task ' +
  'workflow activity signal deadline reconcile retry budget evidence result store document page crawl'
).split(' ');

/** Deterministic text of about `kib` KiB for page `i`. */
function filler(i: number, kib: number): string {
  const paras: string[] = [];
  let size = 0;
  let n = i * 7919 + 1;
  while (size < kib * 1024) {
    const words: string[] = [];
    for (let w = 0; w < 80; w++) {
      n = (n * 48271) % 2147483647;
      words.push(WORDS[n % WORDS.length]!);
    }
    const p = `<p>${words.join(' ')}.</p>`;
    paras.push(p);
    size += p.length;
  }
  return paras.join('\n');
}

const page = (title: string, body: string) =>
  `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>\n<body><h1>${title}</h1>\n${body}\n</body></html>\n`;

/** Starts the site on `127.0.0.10` (a free port). */
export async function startSite(opts: SiteOptions = {}): Promise<Site> {
  const slowPages = opts.slowPages ?? 12;
  const slowMs = opts.slowMs ?? 1_500;
  const largePages = opts.largePages ?? 120;
  const largeKiB = opts.largeKiB ?? 96;
  const app = Fastify({ logger: false });
  let inFlight = 0;
  const served: string[] = [];
  app.addHook('onRequest', async (_req, reply) => {
    inFlight++;
    // `close` comes once per answer, sent or abandoned by the client.
    reply.raw.once('close', () => inFlight--);
  });
  app.addHook('onResponse', async (req, reply) => {
    if (reply.statusCode < 300) served.push(req.url);
  });
  await app.register(fastifyStatic, { root: path.join(REPO, 'sample-site'), index: ['index.html'] });
  // `/slow/` is page 0, so a crawl from it finds the chain below its path (Firecrawl crawls only there).
  app.get<{ Params: { i?: string } }>('/slow/:i?', async (req, reply) => {
    const i = Number(req.params.i ?? 0);
    if (!Number.isInteger(i) || i < 0 || i >= slowPages)
      return reply.code(404).type('text/html').send(page('Not found', ''));
    await new Promise((r) => setTimeout(r, slowMs));
    const next = i + 1 < slowPages ? `<p><a href="/slow/${i + 1}">Next page</a></p>` : '<p>The last page.</p>';
    return reply
      .type('text/html; charset=utf-8')
      .send(page(`Slow page ${i}`, `<p>Page ${i} of the slow chain.</p>\n${next}`));
  });
  app.get('/large/', async (_req, reply) => {
    const links = Array.from({ length: largePages }, (_, i) => `<li><a href="/large/${i}">Large page ${i}</a></li>`);
    return reply.type('text/html; charset=utf-8').send(page('Large pages', `<ul>\n${links.join('\n')}\n</ul>`));
  });
  app.get<{ Params: { i: string } }>('/large/:i', async (req, reply) => {
    const i = Number(req.params.i);
    if (!Number.isInteger(i) || i < 0 || i >= largePages)
      return reply.code(404).type('text/html').send(page('Not found', ''));
    return reply.type('text/html; charset=utf-8').send(page(`Large page ${i}`, filler(i, largeKiB)));
  });
  const address = await app.listen({ host: '127.0.0.10', port: 0 });
  return {
    url: address.replace(/\/$/, ''),
    inFlight: () => inFlight,
    served,
    close: () => app.close(),
  };
}
