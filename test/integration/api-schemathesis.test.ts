/**
 * Hostile HTTP input: schemathesis (PyPI, pinned; `test/helpers/schemathesis.ts`)
 * against the API's own `/openapi.json`, every check (`--checks all`: no 5xx, every status,
 * header, content type and body as the document declares them, schema-violating requests
 * refused, schema-valid ones accepted, 405 + `Allow` for undeclared methods, missing auth refused),
 * with a fixed seed and a bounded number of examples per operation, so the run is the same every
 * time and ends by itself. One hook (`test/fixtures/schemathesis/hooks.py`) drops generated
 * bodies that break the one rule JSON Schema cannot state (`initialDelayMs` ≤ `maxDelayMs`); the
 * configuration (`schemathesis.toml`) accepts the documented `422` for a reused Idempotency-Key. The API runs on a real stack (dev server, worker, store, reference
 * provider) with webhooks on; the provider account never finishes a job and never fetches, so
 * generated URLs reach no network. Then: at least 1,000 requests reached the API, none answered
 * 5xx, the store holds exactly one job per `202` of `POST /v1/scrapes` (a refused request made
 * none), and every provider job belongs to one of those jobs.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../tools/devserver/process.js';
import { API_KEYS, startApiStack, type ApiStack } from '../helpers/api.js';
import { recordAnswer } from '../helpers/evidence.js';
import { ensureSchemathesis, SCHEMATHESIS_VERSION } from '../helpers/schemathesis.js';
import { REPO, waitFor } from '../helpers/stack.js';

/** Examples per operation and phase; with the coverage phase's own cases this makes > 1,000 requests. */
const MAX_EXAMPLES = Number(process.env.SCRAPE_SCHEMATHESIS_EXAMPLES ?? 80);
const SEED = 13;
let api: ApiStack;

beforeAll(async () => {
  api = await startApiStack({
    webhooks: true,
    profile: { concurrency: 100_000 },
    api: {
      rateLimit: {
        default: { max: 1_000_000, timeWindowMs: 60_000 },
        accounts: {},
        unauthenticated: { max: 1_000_000, timeWindowMs: 60_000 },
        webhooks: { max: 1_000_000, timeWindowMs: 60_000 },
      },
    },
  });
  // No job of this account ever fetches its target: generated URLs name hosts anywhere.
  api.stack.sim.faults.add({ account: 'acme', endpoint: 'submit', action: 'never_finish' });
}, 240_000);
afterAll(async () => api?.stop());

/** Requests the API answered, from its request log (pino: `incoming request` + `request completed`, joined by `reqId`). */
function answered(logText: string): { method: string; url: string; status: number }[] {
  const req = new Map<string, { method: string; url: string }>();
  const out: { method: string; url: string; status: number }[] = [];
  for (const line of logText.split('\n')) {
    if (!line) continue;
    const l = JSON.parse(line) as {
      reqId?: string;
      msg?: string;
      req?: { method: string; url: string };
      res?: { statusCode: number };
    };
    if (l.msg === 'incoming request' && l.reqId && l.req) req.set(l.reqId, l.req);
    if (l.msg === 'request completed' && l.reqId && l.res)
      out.push({ ...(req.get(l.reqId) ?? { method: '?', url: '?' }), status: l.res.statusCode });
  }
  return out;
}

describe(`schemathesis ${SCHEMATHESIS_VERSION} against /openapi.json`, () => {
  it('finds no 5xx and no answer that breaks the document; refused requests create no job and no provider call', async () => {
    const st = await ensureSchemathesis();
    const args = [
      '--config-file',
      path.join(REPO, 'test/fixtures/schemathesis/schemathesis.toml'),
      'run',
      `${api.url}/openapi.json`,
      '--checks',
      'all',
      '--max-examples',
      String(MAX_EXAMPLES),
      '--seed',
      String(SEED),
      '--workers',
      '1',
      '--request-timeout',
      '20',
      '-H',
      `Authorization: Bearer ${API_KEYS.acme}`,
      '--no-color',
    ];
    const t0 = Date.now();
    const r = await runCommand(st, args, {
      env: {
        ...process.env,
        SCHEMATHESIS_HOOKS: path.join(REPO, 'test/fixtures/schemathesis/hooks.py'),
        NO_COLOR: '1',
      },
      timeoutMs: 360_000,
      tailBytes: 400_000,
    });
    const tookS = (Date.now() - t0) / 1000;
    const output = `${r.stdout}\n${r.stderr}`;
    recordAnswer('cli', 'st run', output); // the secrets scan reads it too
    const requests = answered(api.logs()).filter((a) => a.url !== '/openapi.json');
    const byStatus: Record<string, number> = {};
    for (const a of requests) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
    console.log(
      `schemathesis ${SCHEMATHESIS_VERSION}: ${requests.length} requests in ${tookS.toFixed(1)} s, by status ${JSON.stringify(byStatus)}\n${output.slice(-6000)}`,
    );
    expect(r.code, output.slice(-20_000)).toBe(0);
    expect(requests.length).toBeGreaterThanOrEqual(1_000);
    expect(requests.filter((a) => a.status >= 500)).toEqual([]);

    // Every job in the store is one a `202` answered; every provider job is one of those jobs.
    const created = requests.filter(
      (a) => a.method === 'POST' && a.url.split('?')[0] === '/v1/scrapes' && a.status === 202,
    ).length;
    const jobs = await api.stack.store.db.selectFrom('jobs').select(['id', 'task_id']).execute();
    expect(jobs.length).toBe(created);
    // Settled: every job has reached the provider (a task ID), or ended without it (refused at
    // submit, or cancelled by the stateful phase before its submit) with its row final. A workflow
    // that closed while its row is not final is a defect (a cancel racing a refused submit once
    // left rows in `submitting`): it fails here.
    const FINAL = ['completed', 'failed', 'cancelled', 'cancel_unconfirmed', 'expired', 'tracking_interrupted'];
    let open: { id: string; state: string; workflow?: string }[] = [];
    const settled = await waitFor(
      async () => {
        const rows = await api.stack.store.db.selectFrom('jobs').select(['id', 'task_id', 'state']).execute();
        open = rows.filter((j) => !(j.task_id || FINAL.includes(j.state)));
        return open.length === 0 ? rows : undefined;
      },
      120_000,
      'every accepted job to reach the provider or end with its row final',
    ).catch(async (e: Error) => {
      for (const j of open) j.workflow = (await api.stack.temporal.workflow.getHandle(j.id).describe()).status.name;
      throw new Error(`${e.message}: ${JSON.stringify(open).slice(0, 3000)}`);
    });
    const states: Record<string, number> = {};
    for (const j of settled) states[j.state] = (states[j.state] ?? 0) + 1;
    const tasks = settled.filter((j) => j.task_id).map((j) => j.task_id);
    const providerJobs = api.stack.sim.jobsFor('acme').map((j) => j.job_id);
    expect(providerJobs.length).toBe(tasks.length);
    expect(new Set(providerJobs)).toEqual(new Set(tasks));
    console.log(
      `schemathesis: ${created} jobs accepted (202), ${jobs.length} in the store (${JSON.stringify(states)}), ${providerJobs.length} provider jobs`,
    );
  }, 600_000);
});
