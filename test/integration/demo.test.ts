/**
 * `npm run demo` exactly as a newcomer runs it (its own dev server, reference provider, sample
 * site and worker), twice: the second run must attach to the same jobs and create nothing. The
 * first run chooses its four ports through the environment; jobs have readable IDs.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JOBS_VIEW_QUERY } from '../../src/client/schedules.js';
import { freePort } from '../../tools/devserver/devServer.js';
import { keepLogFile, keepSqliteFile, recordCli, recordConfigSecrets } from '../helpers/evidence.js';
import { REPO } from '../helpers/stack.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'scrape-demo-test-'));
afterAll(() => {
  // For the secrets scan: the demo's store, its own Temporal server's database (history blobs hold
  // the payloads as bytes), its worker log and the provider key of its configuration.
  recordConfigSecrets('demo', path.join(dataDir, 'config.json'));
  keepSqliteFile(path.join(dataDir, 'scrapes.db'), 'demo-store');
  keepSqliteFile(path.join(dataDir, 'temporal.db'), 'demo-temporal');
  keepLogFile('demo-worker', path.join(dataDir, 'worker.log'));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function demo(ports: Record<string, string> = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0', ...ports };
  delete env.TEMPORAL_ADDRESS; // the demo starts its own server, as on a fresh machine
  const r = spawnSync('npm', ['run', 'demo', '--', '--exit', '--data-dir', dataDir], {
    cwd: REPO,
    env,
    encoding: 'utf8',
    timeout: 180_000,
  });
  return recordCli(['npm', 'run', 'demo', '--', '--exit'], { code: r.status, out: `${r.stdout}\n${r.stderr}` });
}

describe('npm run demo', () => {
  it('runs the sample batch end to end and prints the summary, the SQLite path and the Web UI address', async () => {
    const [temporal, ui, site, provider] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const ports = {
      SCRAPE_DEMO_TEMPORAL_PORT: String(temporal),
      SCRAPE_DEMO_UI_PORT: String(ui),
      SCRAPE_DEMO_SITE_PORT: String(site),
      SCRAPE_DEMO_PROVIDER_PORT: String(provider),
    };
    const first = demo(ports);
    expect(first.code, first.out).toBe(0);
    expect(first.out).toContain(`dev server at 127.0.0.1:${temporal} `);
    expect(first.out).toContain(`Temporal Web UI: http://127.0.0.1:${ui}`);
    expect(first.out).toContain(`sample site at http://127.0.0.1:${site}`);
    expect(first.out).toContain(`reference provider at http://127.0.0.1:${provider}`);
    expect(first.out).toMatch(/npm run cli -- status scrape:demo:127\.0\.0\.1-index-[0-9a-f]{10}/); // the first row, index.html
    expect(first.out).toContain(`query=${encodeURIComponent(JOBS_VIEW_QUERY)}`);
    expect(first.out).toMatch(/Summary: 8\/8 jobs completed/);
    expect(first.out).toMatch(/line 10: url: url scheme must be http or https, not ftp/);
    expect(first.out).toMatch(/Provider: 8 job\(s\) created this run/);
    // Submits wait for a free slot under the provider's 2-job limit: none bounces off a 429.
    expect(first.out).toMatch(/; 8 submit\(s\), 0 refused \(429\)/);
    expect(first.out).toContain(`Result store (SQLite): ${path.join(dataDir, 'scrapes.db')}`);
    expect(first.out).toMatch(/Temporal Web UI: http:\/\/127\.0\.0\.1:\d+/);
    expect(first.out).toContain('Accepted is not done | Field Notes');
    expect(fs.existsSync(path.join(dataDir, 'config.json'))).toBe(true);

    const second = demo(ports); // the same site address: the same rows, the same keys
    expect(second.code, second.out).toBe(0);
    expect(second.out).toMatch(/Summary: 8\/8 jobs completed/);
    expect(second.out).toMatch(/Provider: 0 job\(s\) created this run/);
    expect(second.out).toMatch(/— 8 result row\(s\) in total/);
  }, 400_000);
});
