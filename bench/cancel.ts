/**
 * Benchmark: how long a cancel takes to reach the provider while a status check hangs.
 * Each job is held `running` by the simulator and its status reads hang (`delay` fault, 60 s; the
 * provider entry's read timeout is 90 s, so the check is really in flight); once the first check is
 * hanging, the job is cancelled through one door — signal, Update, native (what the Web UI's button
 * sends), the HTTP API (`POST /v1/scrapes/:id/cancel`) or the CLI (`node bin/scrape.js cancel <job>
 * --no-wait`, a new process: its start-up counts) —
 * and the figure is the time from the request to the provider's `DELETE …/cancel` (the simulator's
 * own receipt time). `--design inActivity` runs the product's worker with each tracking loop inside
 * its activity (`detachTracking: false`), whose cancel reaches the loop through the activity's
 * cancellation instead of the detached tracker.
 *
 *   npm run bench:cancel -- --per-door 5
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { z } from 'zod';
import { buildApi } from '../src/api/app.js';
import { hashApiKey } from '../src/api/auth.js';
import { cancelSignal } from '../src/workflows/scrape/messages.js';
import { round } from './lib/proc.js';
import {
  finishReport,
  LOAD_OPTIONS,
  machine,
  mean,
  percentile,
  REPO,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietStart,
  withLoadOptions,
} from './lib/report.js';
import { DESIGNS, startStack, type Design } from './lib/stack.js';

const run = promisify(execFile);
const DOORS = ['signal', 'update', 'native', 'http', 'cli'] as const;
type Door = (typeof DOORS)[number];

const OptionsSchema = z.object({
  perDoor: z.coerce.number().int().positive(),
  design: z.enum(DESIGNS).default('v4'),
  doors: z.string().default(DOORS.join(',')),
  ...LOAD_OPTIONS,
  keepDir: z.boolean().default(false),
});
type Options = z.infer<typeof OptionsSchema>;

/** Runs the benchmark; returns the JSON written. */
export async function runCancel(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const doors = o.doors.split(',').map((d) => z.enum(DOORS).parse(d.trim()));
  const quiet = await waitForQuietStart(o, log);
  const load = sampleLoad();
  const account = 'cancel';
  const design: Design = o.design;
  const stack = await startStack({
    name: 'cancel',
    accounts: [{ name: account, profile: { concurrency: 100_000 } }],
    designs: [design],
    readTimeoutMs: 90_000,
    log,
    keepDir: o.keepDir,
  });
  try {
    const apiKey = `bench_${randomBytes(18).toString('base64url')}`;
    const app = await buildApi({
      client: stack.clients[design],
      store: stack.store,
      config: stack.config,
      keys: [{ account, sha256: hashApiKey(apiKey), name: 'bench' }],
    });
    const apiUrl = (await app.listen({ host: '127.0.0.1', port: 0 })).replace(/\/$/, '');
    const cliConfig = stack.configFile(design);
    await stack.startWorker(design);
    stack.sim.faults.add({ account, endpoint: 'submit', action: 'never_finish' });
    stack.sim.faults.add({ account, endpoint: 'status', action: 'delay', delayMs: 60_000 });
    const policy = { activityTimeoutMs: 120_000, cancelConfirmDeadlineMs: 30_000 };
    const samples: Record<string, number[]> = {};
    const inFlight: Promise<unknown>[] = [];
    for (const door of doors) {
      for (let i = 0; i < o.perDoor; i++) {
        const key = `${door}-${i}-${randomBytes(3).toString('hex')}`;
        const ref = await stack.clients[design].startScrape({ account, url: stack.pageUrl(i), key, policy });
        const task = await until(
          () =>
            stack.sim
              .jobsFor(account)
              .find(
                (j) =>
                  j.client_ref !== undefined &&
                  j.url === stack.pageUrl(i) &&
                  j.status_request_times.length > 0 &&
                  !j.cancel_request_times.length,
              ),
          60_000,
          `${key}: a hanging check`,
        );
        const t0 = Date.now();
        const sent = await cancelThrough(door, {
          jobId: ref.jobId,
          apiUrl,
          apiKey,
          cliConfig,
          client: stack.clients[design],
          temporal: stack.temporalClient,
        });
        if (sent.answer) inFlight.push(sent.answer);
        const at = await until(
          () => stack.sim.getJob(task.job_id)?.cancel_request_times[0],
          300_000,
          `${key}: the provider cancel call`,
        );
        (samples[door] ??= []).push(at - t0);
        log(`cancel ${door} #${i}: ${at - t0} ms`);
      }
    }
    await Promise.race([Promise.allSettled(inFlight), new Promise((r) => setTimeout(r, 150_000))]); // Updates and CLI runs still answering
    await app.close();
    const results = Object.entries(samples).map(([door, xs]) => ({
      door,
      n: xs.length,
      p50Ms: percentile(xs, 50),
      maxMs: Math.max(...xs),
      meanMs: round(mean(xs), 0),
    }));
    const out = {
      benchmark: 'cancel',
      options: o,
      machine: { start: quiet.start, end: machine(), underLoad: quiet.underLoad, load: load.stop() },
      workerLog: stack.workerLogCounts(),
      results,
    };
    console.log(
      table(
        ['door', 'n', 'p50 request → provider cancel (ms)', 'max (ms)'],
        results.map((r) => [r.door, r.n, r.p50Ms, r.maxMs]),
      ),
    );
    finishReport(
      'cancel',
      out,
      `design ${design}; load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

/**
 * Sends a cancel through `door`. The signal and native doors resolve once Temporal took the
 * request; the Update, HTTP and CLI doors are left running (they answer with the observed outcome)
 * and their promise is returned, settled, inside an object so that the caller does not wait on it.
 */
async function cancelThrough(
  door: Door,
  c: {
    jobId: string;
    apiUrl: string;
    apiKey: string;
    cliConfig: string;
    client: import('../src/client/index.js').ScrapeClient;
    temporal: import('@temporalio/client').Client;
  },
): Promise<{ answer?: Promise<unknown> }> {
  const handle = c.temporal.workflow.getHandle(c.jobId);
  if (door === 'signal') await handle.signal(cancelSignal, { reason: 'bench', requestedBy: 'bench' });
  else if (door === 'native') await handle.cancel();
  else if (door === 'update')
    return {
      answer: c.client
        .cancelScrape('cancel', c.jobId, { reason: 'bench', requestedBy: 'bench', timeoutMs: 120_000 })
        .catch(() => undefined),
    };
  else if (door === 'http')
    return {
      answer: fetch(`${c.apiUrl}/v1/scrapes/${encodeURIComponent(c.jobId)}/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${c.apiKey}`, 'content-type': 'application/json' },
        body: '{}',
      }).catch(() => undefined),
    };
  else
    return {
      answer: run(
        process.execPath,
        ['bin/scrape.js', 'cancel', c.jobId, '--no-wait', '--account', 'cancel', '--config', c.cliConfig],
        {
          cwd: REPO,
          env: { ...process.env, SCRAPE_CONFIG: '' },
        },
      ).catch(() => undefined),
    };
  return {};
}

async function until<T>(f: () => T | undefined | Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

runAsScript(
  'cancel.ts',
  withLoadOptions(new Command('bench:cancel'))
    .option('-n, --per-door <n>', 'jobs cancelled through each door', '5')
    .option(
      '--design <v4|inActivity>',
      'worker measured: the product (v4) or its tracking loops inside activities',
      'v4',
    )
    .option('--doors <list>', `comma-separated doors (${DOORS.join(',')})`, DOORS.join(','))
    .option('--keep-dir', 'keep the temp directory'),
  (opts) => runCancel(OptionsSchema.parse(opts)),
);
