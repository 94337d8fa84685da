/**
 * Global setup of `npm run test:real` (after the shared Temporal setup,
 * `test/helpers/globalSetup.ts`): obtains and builds (cached) the two real servers, starts them for
 * the run and gives the tests their addresses with `inject('real')`:
 * - Firecrawl's own API server, built from its source (`obtainMaterial('firecrawl-source')`) by
 *   `firecrawl/build.ts`, run with Redis by `firecrawl/server.ts`;
 * - Scrapyd from PyPI in a cached venv with the `realsite` project deployed (`scrapyd/server.ts`).
 *
 * A server that cannot be built or started fails the whole suite with what is missing; nothing is
 * skipped. Test files run in other processes: they ask for a server restart through the control
 * endpoint (`POST <control>/restart/firecrawl|scrapyd`, answered once the server serves again).
 * The teardown stops everything it started; `SCRAPE_KEEP_REAL_LOGS=1` keeps the servers' logs.
 */
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { obtainMaterial } from '../material/index.js';
import { ensureFirecrawlBuild } from './firecrawl/build.js';
import { startFirecrawl, type FirecrawlServer } from './firecrawl/server.js';
import { buildEgg, ensureScrapydVenv, startScrapyd, type ScrapydServer } from './scrapyd/server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    real: {
      /** Firecrawl's API (`http://127.0.0.1:<port>`; any bearer key). */
      firecrawl: string;
      /** Scrapyd (`http://127.0.0.1:<port>`; no authentication). */
      scrapyd: string;
      /** The setup's control endpoint (`http://127.0.0.1:<port>`). */
      control: string;
    };
  }
}

let firecrawl: FirecrawlServer | undefined;
let scrapyd: ScrapydServer | undefined;
let control: Server | undefined;
let runDir: string | undefined;

const log = (line: string) => process.stderr.write(`[real] ${line}\n`);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

export async function setup(project: TestProject): Promise<void> {
  const t0 = Date.now();
  const source = await obtainMaterial('firecrawl-source');
  // Both builds at once: pip and pnpm mostly wait on the registries.
  const [fcBuild, venv] = await Promise.all([ensureFirecrawlBuild({ source, log }), ensureScrapydVenv(log)]);
  log(
    `Firecrawl build ${fcBuild.built ? 'made' : 'from the cache'} in ${secs(fcBuild.tookMs)}; Scrapyd venv ${venv.built ? 'made' : 'from the cache'} in ${secs(venv.tookMs)} (${Object.entries(
      venv.versions,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')})`,
  );
  runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-real-servers-'));
  const t1 = Date.now();
  const egg = await buildEgg(venv);
  const started = await Promise.allSettled([
    startFirecrawl(fcBuild, path.join(runDir, 'firecrawl')),
    startScrapyd(venv, path.join(runDir, 'scrapyd'), egg),
  ]);
  firecrawl = started[0].status === 'fulfilled' ? started[0].value : undefined;
  scrapyd = started[1].status === 'fulfilled' ? started[1].value : undefined;
  const failed = started.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length > 0) {
    await teardown();
    throw new Error(failed.map((f) => (f.reason as Error).message).join('\n\n'));
  }
  if (!firecrawl || !scrapyd) throw new Error('unreachable: both servers started');
  log(
    `servers up in ${secs(Date.now() - t1)} (setup ${secs(Date.now() - t0)}): Firecrawl ${firecrawl.url}, Scrapyd ${scrapyd.url}; logs in ${runDir}`,
  );
  control = createServer((req, res) => {
    const m = /^\/restart\/(firecrawl|scrapyd)$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !m) {
      res.writeHead(404).end();
      return;
    }
    const t = Date.now();
    const target = m[1] === 'firecrawl' ? firecrawl! : scrapyd!;
    target.restart().then(
      () => {
        log(`${m[1]} restarted in ${secs(Date.now() - t)}`);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true }));
      },
      (e: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(e.message),
    );
  });
  await new Promise<void>((resolve) => control!.listen(0, '127.0.0.1', resolve));
  const { port } = control.address() as { port: number };
  project.provide('real', { firecrawl: firecrawl.url, scrapyd: scrapyd.url, control: `http://127.0.0.1:${port}` });
}

export async function teardown(): Promise<void> {
  await new Promise((resolve) => (control ? control.close(resolve) : resolve(undefined)));
  await Promise.all([firecrawl?.stop(), scrapyd?.stop()]);
  if (runDir && !/^(1|true|yes)$/i.test(process.env.SCRAPE_KEEP_REAL_LOGS ?? ''))
    fs.rmSync(runDir, { recursive: true, force: true });
  else if (runDir) log(`kept the servers' logs in ${runDir}`);
}
