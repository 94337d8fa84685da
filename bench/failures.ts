/**
 * Benchmark: what a job asks of a provider whose reads keep failing, and how it ends (issue 34's
 * "Done when"). Three cases on the reference provider (`tools/sim`, a real HTTP server; its faults
 * are injected per account), each job on the product's worker and a real dev server:
 *
 * - `status`: every status read answers `520` (`error_5xx`), no `Retry-After`;
 * - `status-ra`: the same with a `Retry-After` header (`error_5xx` with `retryAfterSeconds`);
 * - `result`: the job completes, the status says so, and its result cannot be parsed (`bad_result`:
 *   the first completed answer carries no result, every later one an HTML error page where the page
 *   object belongs).
 *
 * Thirty minutes of wall time per job is too long for a run, so the run divides every duration of
 * the job's policy that paces its reads (`initialDelayMs`, `maxDelayMs`, `failedReadMaxDelayMs`,
 * `failedReadBudgetMs`, `deadlineMs`, `fastPathMs`) by `--factor`; the `Retry-After` it announces
 * (whole seconds, `--retry-after-s`) then stands for `factor ×` that many seconds of the default
 * policy. Beside what was measured it prints what the same schedule functions give without a run
 * (`lib/failedReads.ts`: the schedule is pure): for the run's policy (what the run should show) and
 * for the default policy over 30 minutes (nominal jitter, and the fewest and most reads any jitter
 * gives). For each job: every request with its answer over time (in the default policy's time: the
 * run's × factor), when the job ended, in what state and why, and the requests that came after its
 * end (none expected) while the benchmark watched on.
 *
 *   npm run bench:failures -- [--factor 5] [--retry-after-s 1] [--jobs 1]
 */
import { Command } from 'commander';
import { z } from 'zod';
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../src/model/types.js';
import type { SimResponseEvent } from '../tools/sim/index.js';
import { failingJob, scaledOverrides, scaledPolicy, type ComputedFailingJob } from './lib/failedReads.js';
import {
  finishReport,
  LOAD_OPTIONS,
  machine,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietStart,
  withLoadOptions,
} from './lib/report.js';
import { waitFinal } from './lib/scenarios.js';
import { startStack, type Stack } from './lib/stack.js';

const CASES = [
  { key: 'status', label: 'every status read fails (520), no Retry-After', retryAfter: false, result: false },
  { key: 'status-ra', label: 'every status read fails (520) with Retry-After', retryAfter: true, result: false },
  { key: 'result', label: 'status says completed, the result cannot be parsed', retryAfter: false, result: true },
] as const;
type Case = (typeof CASES)[number];

const OptionsSchema = z.object({
  /** Every pacing duration of the job's policy is divided by this. */
  factor: z.coerce.number().min(1),
  /** Seconds of the `Retry-After` header of the `status-ra` case, in the run (whole seconds, ≥ 1). */
  retryAfterS: z.coerce.number().int().min(1),
  /** HTTP status of the failed status reads (500–599). */
  status: z.coerce.number().int().min(500).max(599),
  /** Jobs per case. */
  jobs: z.coerce.number().int().positive(),
  /** Cases to run (keys, comma-separated; default all). */
  cases: z
    .string()
    .default(CASES.map((c) => c.key).join(','))
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(CASES.map((c) => c.key) as [Case['key'], ...Case['key'][]])).min(1)),
  /** After the last job ended, watch this long for requests that should not come (s; default: the run's longest failed-read back-off + 5 s). */
  watchAfterS: z.coerce.number().min(0).optional(),
  ...LOAD_OPTIONS,
  keepDir: z.boolean().default(false),
});
type Options = z.infer<typeof OptionsSchema>;

/** One read of a job's task as the provider answered it. */
interface MeasuredRead {
  /** ms after the task was created (run time) when the answer was sent. */
  atMs: number;
  /** The HTTP status, or `"dropped"`. */
  status: number | 'dropped';
  /** What it told the product: `ok`, or why it failed (`520`, `unparsable result`). */
  answer: string;
  failed: boolean;
}

/** One job as measured. Times are ms after the provider created its task (run time, not scaled). */
interface MeasuredJob {
  jobId: string;
  taskId: string | null;
  state: string;
  /** The workflow's status once the job ended (`FAILED` for a run that ends `tracking_interrupted`). */
  workflowStatus: string | null;
  endedAtMs: number | null;
  lastError: string | null;
  /** The note of the job's last state change (the product's words for why it ended). */
  note: string | null;
  /** Submits by the job's account (one per job unless a submit was retried). */
  submits: number;
  /** Every read of the job's task (`GET /api/jobs/:id`: the reference kind reads its result there too). */
  reads: MeasuredRead[];
  /** Reads of the task that came after the job had ended. */
  readsAfterEnd: number;
}

/** Reads per 5-minute window of default-policy time (`atMs` × `factor`), up to 30 min and past it. */
function perFiveMinutes(atMs: readonly number[], factor: number): string {
  const bins = Array.from({ length: 7 }, () => 0);
  for (const t of atMs) bins[Math.min(6, Math.floor((t * factor) / 300_000))]!++;
  const names = ['0–5', '5–10', '10–15', '15–20', '20–25', '25–30', '30+'];
  return bins
    .map((n, i) => `${names[i]}: ${n}`)
    .filter((s, i) => i < 6 || !s.endsWith(': 0'))
    .join(' · ');
}

/** Seconds with one decimal. */
const s1 = (ms: number) => (ms / 1000).toFixed(1);

/** The computed job in words: its reads, when and how it ended. */
function computedLine(c: ComputedFailingJob): string {
  const failed = c.reads.filter((r) => !r.ok).length;
  return `${c.reads.length} reads (${failed} failed), ends ${c.state} at ${(c.endedAtMs / 60_000).toFixed(1)} min (${c.endedBy})`;
}

/** Waits `ms` ms. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the benchmark; returns the JSON written. */
export async function runFailures(o: Options): Promise<Record<string, unknown>> {
  const log = (l: string) => console.error(l);
  const quiet = await waitForQuietStart(o, log);
  const load = sampleLoad();
  const F = o.factor;
  const runPolicy = scaledPolicy(DEFAULT_POLL_POLICY, F);
  const runRetryAfterMs = o.retryAfterS * 1000;
  const account = (c: Case) => `f-${c.key}`;
  const cases = CASES.filter((c) => o.cases.includes(c.key));
  const stack: Stack = await startStack({
    name: 'failures',
    accounts: cases.map((c) => ({ name: account(c), profile: { concurrency: 1_000, minRunMs: 0 } })),
    log,
    keepDir: o.keepDir,
  });
  try {
    for (const c of cases) {
      if (c.result) stack.sim.faults.add({ account: account(c), endpoint: 'submit', action: 'bad_result' });
      else
        stack.sim.faults.add({
          account: account(c),
          endpoint: 'status',
          action: 'error_5xx',
          status: o.status,
          ...(c.retryAfter ? { retryAfterSeconds: o.retryAfterS } : {}),
        });
    }
    const responses: SimResponseEvent[] = [];
    const accounts = new Set(cases.map(account));
    stack.sim.events.on('response', (e) => {
      if (e.account && accounts.has(e.account)) responses.push(e);
    });
    await stack.startWorker('v4');
    const ids: Record<string, string[]> = {};
    for (const c of cases) {
      ids[c.key] = [];
      for (let i = 0; i < o.jobs; i++) {
        const ref = await stack.clients.v4.startScrape({
          account: account(c),
          provider: 'reference',
          url: stack.pageUrl(i),
          key: `${c.key}-${i}`,
          policy: scaledOverrides(runPolicy),
        });
        ids[c.key]!.push(ref.jobId);
      }
    }
    const all = Object.values(ids).flat();
    log(
      `failures: ${all.length} jobs started; policy ÷${F} (deadline ${s1(runPolicy.deadlineMs)} s, failed-read budget ${runPolicy.failedReadLimit} reads and ${s1(runPolicy.failedReadBudgetMs)} s)`,
    );
    const fin = await waitFinal(stack, all, runPolicy.deadlineMs * 2 + 120_000, log);
    log(`failures: ${fin.final}/${all.length} final ${JSON.stringify(fin.states)}`);
    const watchS = o.watchAfterS ?? Math.ceil(runPolicy.failedReadMaxDelayMs / 1000) + 5;
    log(`failures: watching ${watchS} s for reads after the jobs ended`);
    await sleep(watchS * 1000);

    const measured: Record<string, MeasuredJob[]> = {};
    for (const c of cases) {
      const rows = await stack.store.db
        .selectFrom('jobs')
        .select(['id', 'state', 'task_id', 'finished_at', 'last_error'])
        .where('id', 'in', ids[c.key]!)
        .execute();
      const submits = responses.filter((e) => e.account === account(c) && e.endpoint === 'submit').length;
      measured[c.key] = await Promise.all(
        rows.map(async (r) => {
          const task = r.task_id ? stack.sim.getJob(r.task_id) : undefined;
          const t0 = task ? Date.parse(task.created_at) : Number.NaN;
          const done = task?.finished_at ? Date.parse(task.finished_at) : Number.POSITIVE_INFINITY;
          const ended = r.finished_at ? Date.parse(r.finished_at) : undefined;
          // `bad_result`: answers to reads received after the task finished carry no result (the
          // first), then an unparsable one (every later one), all `200`.
          let completedAnswers = 0;
          const reads = responses
            .filter((e) => e.jobId !== null && e.jobId === r.task_id)
            .map((e): MeasuredRead => {
              const base = { atMs: e.at - t0, status: e.status };
              if (e.status !== 200) return { ...base, answer: String(e.status), failed: true };
              if (!c.result || e.at - e.durationMs < done) return { ...base, answer: 'ok', failed: false };
              return completedAnswers++ === 0
                ? { ...base, answer: 'completed, no result', failed: false }
                : { ...base, answer: 'unparsable result', failed: true };
            });
          let workflowStatus: string | null = null;
          try {
            workflowStatus = (await stack.temporalClient.workflow.getHandle(r.id).describe()).status.name;
          } catch {
            // not found: left null
          }
          const ev = await stack.store.db
            .selectFrom('job_events')
            .select('detail')
            .where('job_id', '=', r.id)
            .where('type', '=', 'state')
            .orderBy('at', 'desc')
            .executeTakeFirst();
          let note: string | null = null;
          try {
            note = ev?.detail ? ((JSON.parse(ev.detail) as { note?: string }).note ?? null) : null;
          } catch {
            note = null;
          }
          let lastError: string | null = null;
          try {
            lastError = r.last_error
              ? ((JSON.parse(r.last_error) as { message?: string }).message ?? r.last_error)
              : null;
          } catch {
            lastError = r.last_error;
          }
          return {
            jobId: r.id,
            taskId: r.task_id,
            state: r.state,
            workflowStatus,
            endedAtMs: ended === undefined ? null : ended - t0,
            lastError,
            note,
            submits: rows.length === 1 ? submits : Number.NaN,
            reads,
            readsAfterEnd: ended === undefined ? 0 : reads.filter((x) => x.atMs + t0 > ended).length,
          } satisfies MeasuredJob;
        }),
      );
    }

    const computed = Object.fromEntries(
      cases.map((c) => {
        const run = failingJob(runPolicy, {
          retryAfterMs: c.retryAfter ? runRetryAfterMs : undefined,
          resultReadFails: c.result,
        });
        const def = (random: number) =>
          failingJob(DEFAULT_POLL_POLICY, {
            retryAfterMs: c.retryAfter ? runRetryAfterMs * F : undefined,
            resultReadFails: c.result,
            random,
          });
        return [c.key, { runPolicy: run, defaultPolicy: { nominal: def(0.5), most: def(0), fewest: def(0.999) } }];
      }),
    );

    const policyOf = (p: PollPolicy) => ({
      initialDelayMs: p.initialDelayMs,
      maxDelayMs: p.maxDelayMs,
      deadlineMs: p.deadlineMs,
      failedReadLimit: p.failedReadLimit,
      failedReadBudgetMs: p.failedReadBudgetMs,
      failedReadMaxDelayMs: p.failedReadMaxDelayMs,
      fastPathMs: p.fastPathMs,
      jitter: p.jitter,
    });
    const out = {
      benchmark: 'failures',
      options: o,
      machine: { start: quiet.start, end: machine(), underLoad: quiet.underLoad, load: load.stop() },
      workerLog: stack.workerLogCounts(),
      factor: F,
      policies: { run: policyOf(runPolicy), default: policyOf(DEFAULT_POLL_POLICY) },
      retryAfter: { runS: o.retryAfterS, defaultPolicyS: o.retryAfterS * F },
      cases: cases.map((c) => ({ ...c, account: account(c), measured: measured[c.key], computed: computed[c.key] })),
    };

    console.log(
      `Policy of the run: the default ÷ ${F} (every duration below in default-policy time: the run's × ${F}); Retry-After ${o.retryAfterS} s in the run = ${o.retryAfterS * F} s of the default policy; failed reads answer ${o.status}.`,
    );
    const rows: (string | number)[][] = [];
    for (const c of cases) {
      const comp = computed[c.key]!;
      for (const m of measured[c.key]!) {
        const failed = m.reads.filter((r) => r.failed).length;
        rows.push([
          c.label,
          `${Number.isNaN(m.submits) ? '—' : m.submits} submit + ${m.reads.length} reads (${failed} failed); after the end: ${m.readsAfterEnd}`,
          m.endedAtMs === null
            ? `not ended (${m.state})`
            : `${m.state} at ${((m.endedAtMs * F) / 60_000).toFixed(1)} min (run: ${s1(m.endedAtMs)} s); workflow ${m.workflowStatus ?? '—'}`,
          computedLine(comp.runPolicy),
          `${computedLine(comp.defaultPolicy.nominal)}; any jitter: ${comp.defaultPolicy.fewest.reads.length}–${comp.defaultPolicy.most.reads.length} reads`,
        ]);
      }
    }
    console.log(
      table(
        [
          'case',
          'measured: requests',
          'measured: end (default-policy time)',
          "computed for the run's policy",
          'default policy, 30 min, computed (+ 1 submit)',
        ],
        rows,
      ),
    );
    for (const c of cases) {
      const comp = computed[c.key]!.defaultPolicy.nominal;
      for (const m of measured[c.key]!) {
        console.log(`${c.key} (${m.jobId}): ${m.state}: ${m.note ?? '—'}`);
        console.log(
          `  measured reads at (s of default-policy time after the task was created; answer): ${m.reads.map((r) => `${s1(r.atMs * F)} ${r.answer}`).join(', ') || 'none'}`,
        );
        console.log(
          `  measured reads per 5 min: ${perFiveMinutes(
            m.reads.map((r) => r.atMs),
            F,
          )}`,
        );
      }
      console.log(
        `  computed, default policy (nominal jitter), reads at (s): ${comp.reads.map((r) => `${s1(r.atMs)} ${r.read}${r.ok ? ' ok' : ' fails'}`).join(', ')}`,
      );
      console.log(
        `  computed reads per 5 min: ${perFiveMinutes(
          comp.reads.map((r) => r.atMs),
          1,
        )}`,
      );
    }
    finishReport(
      'failures',
      out,
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; max during the run ${out.machine.load.max1m}`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'failures.ts',
  withLoadOptions(new Command('bench:failures'))
    .option('--factor <x>', 'divide every pacing duration of the policy by this', '5')
    .option('--retry-after-s <s>', 'Retry-After of the status-ra case in the run, whole seconds', '1')
    .option('--status <code>', 'HTTP status of the failed status reads', '520')
    .option('-n, --jobs <n>', 'jobs per case', '1')
    .option('--cases <list>', `cases to run, comma-separated: ${CASES.map((c) => c.key).join(', ')}`)
    .option('--watch-after-s <s>', 'after the jobs ended, watch this long for reads that should not come')
    .option('--keep-dir', 'keep the temp directory'),
  (opts) => runFailures(OptionsSchema.parse(opts)),
);
