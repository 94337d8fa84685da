/**
 * Benchmark: scale. 10,000 jobs pending at once on one worker: the provider holds
 * every job `queued` (`hold` fault, never released), so each workflow waits on its durable timers
 * and polls on the default schedule (2 s growing ×1.5 to 60 s). Reports:
 * - time to start them all (`ScrapeClient.startScrape`: store row + workflow start);
 * - worker RSS, Temporal server RSS (and this process: simulator + driver), sampled from `/proc`;
 * - worker slots in use while the jobs wait: `worker.getStatus()` of the worker process
 *   (activities and workflow activations in flight, cached workflows), and the task queues'
 *   backlog from `DescribeTaskQueue` (`reportStats`);
 * - with `--settle-min M`, how long it took (at most M minutes) until no job was `submitting`,
 *   so the window measures the waiting jobs apart from the start burst;
 * - the poll load the waiting jobs create: status checks per second demanded by the schedule vs
 *   achieved at the provider — the demand counted from each start (what the caller asked for) and
 *   from each submit the provider received (when the job's poll schedule really began) — and the
 *   CPU of worker and server while waiting;
 * - the worker's memory: RSS of the whole process, and its main thread's V8 heap and external
 *   memory (the workflow thread and the SDK's native core are in the rest);
 * - what bounds the checks achieved, while waiting: the worker's event loop (utilization and lag,
 *   reported by the worker process; better-sqlite3 is synchronous, so a store write waiting for
 *   SQLite's lock stalls the whole worker), the SDK worker's task slots and pollers and the
 *   schedule-to-start latency it saw (its Core metrics), the server's schedule-to-start latency
 *   per task type and its persistence (its metrics), and a line naming what is saturated;
 * - whether the Web UI's list query still answers: visibility `ListWorkflowExecutions` and
 *   `CountWorkflowExecutions` with `ScrapeState = "pending"`, timed, during and after the starts;
 *   and the dev server's Web UI HTTP API (`/api/v1/namespaces/<ns>/workflows?query=…`) when the
 *   UI is on (default).
 *
 *   npm run bench:scale -- --jobs 10000
 */
import path from 'node:path';
import { Command } from 'commander';
import PQueue from 'p-queue';
import proto from '@temporalio/proto';
import { z } from 'zod';
import { DEFAULT_POLL_POLICY } from '../src/model/types.js';
import type { SimRequestEvent } from '../tools/sim/index.js';
import { cpuDelta, cpuSnapshot, mib, round, sampleForeignCpu, sampleMemory, type Measured } from './lib/proc.js';
import {
  finishReport,
  LOAD_OPTIONS,
  machine,
  mean,
  percentile,
  runAsScript,
  sampleLoad,
  table,
  waitForQuietStart,
  withLoadOptions,
} from './lib/report.js';
import { nominalChecksBy } from './lib/schedule.js';
import {
  persistenceDelta,
  scheduleToStartDelta,
  serverSnapshot,
  serverWaitsDelta,
  tasksAddedDelta,
} from './lib/serverMetrics.js';
import { workerGauges, workerSnapshot, workerWindow, type WorkerGauges } from './lib/workerMetrics.js';
import { DESIGNS, startStack, type Stack } from './lib/stack.js';

const { temporal } = proto;

const OptionsSchema = z.object({
  jobs: z.coerce.number().int().positive(),
  startConcurrency: z.coerce.number().int().positive(),
  observeS: z.coerce.number().positive(),
  /** Minutes to wait after the last start for every job to leave `submitting` before observing; 0: observe at once. */
  settleMin: z.coerce.number().min(0).default(0),
  ui: z.boolean().default(true),
  ...LOAD_OPTIONS,
  keepDir: z.boolean().default(false),
  maxCachedWorkflows: z.coerce.number().int().min(0).optional(),
  /** Dev server dynamic config `KEY=JSON` (repeatable), e.g. to test what limits the server. */
  dynamicConfig: z.array(z.string().regex(/^[A-Za-z0-9_.]+=.+$/)).default([]),
  /** Dev server persistence: the SQLite `file` (default, as in the demo) or `memory`. */
  db: z.enum(['file', 'memory']).default('file'),
  workerCpuProf: z.string().min(1).optional(),
  /** Node options for the worker process, space-separated (e.g. `--max-old-space-size=640`). */
  workerNodeArgs: z.string().default(''),
  /** Environment for the worker process, `KEY=VALUE` (repeatable; e.g. `MALLOC_ARENA_MAX=2`). */
  workerEnv: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*=.*$/)).default([]),
  /** The worker measured (`bench/lib/stack.ts`): `v4` the product, `inActivity` the product with each tracking loop inside its activity. */
  design: z.enum(DESIGNS).default('v4'),
  /**
   * Each job's tracking deadline, minutes (default the policy's, 30; 1 s to 30 days, as a request
   * may give): a run whose first submit comes longer than that before the end of its window (a
   * large count leaving `submitting` slowly, a long settle) needs a longer one, or its first jobs
   * stop waiting as `tracking_interrupted` before the window closes.
   */
  deadlineMin: z.coerce
    .number()
    .min(1 / 60) // the request schema's bounds: 1 s to 30 days
    .max(30 * 24 * 60)
    .default(DEFAULT_POLL_POLICY.deadlineMs / 60_000),
});
type Options = z.infer<typeof OptionsSchema>;

const QUERY = 'ScrapeState = "pending"';

/** One timed visibility probe. Durations in ms. */
interface ListProbe {
  at: string;
  phase: string;
  started: number;
  listMs: number;
  listRows: number;
  countMs: number;
  count: number;
  /** Jobs still `submitting` (first workflow task not yet run), counted the same way. */
  submitting: number;
  ui?: { ms: number; status: number; rows: number } | { error: string };
}

async function probeList(stack: Stack, phase: string, started: number): Promise<ListProbe> {
  const svc = stack.temporalClient.connection.workflowService;
  const ns = stack.temporal.namespace;
  let t = performance.now();
  const list = await svc.listWorkflowExecutions({ namespace: ns, query: QUERY, pageSize: 100 });
  const listMs = performance.now() - t;
  t = performance.now();
  const count = await svc.countWorkflowExecutions({ namespace: ns, query: QUERY });
  const countMs = performance.now() - t;
  const submitting = await svc.countWorkflowExecutions({ namespace: ns, query: 'ScrapeState = "submitting"' });
  const probe: ListProbe = {
    at: new Date().toISOString(),
    phase,
    started,
    listMs: round(listMs, 1),
    listRows: list.executions?.length ?? 0,
    countMs: round(countMs, 1),
    count: Number(count.count ?? 0),
    submitting: Number(submitting.count ?? 0),
  };
  if (stack.temporal.uiUrl) {
    t = performance.now();
    try {
      const res = await fetch(
        `${stack.temporal.uiUrl}/api/v1/namespaces/${encodeURIComponent(ns)}/workflows?query=${encodeURIComponent(QUERY)}`,
        {
          signal: AbortSignal.timeout(30_000),
        },
      );
      const body = (await res.json().catch(() => ({}))) as { executions?: unknown[] };
      probe.ui = { ms: round(performance.now() - t, 1), status: res.status, rows: body.executions?.length ?? 0 };
    } catch (e) {
      probe.ui = { error: (e as Error).message };
    }
  }
  return probe;
}

async function backlog(
  stack: Stack,
  taskQueue: string,
): Promise<
  Record<string, { backlog: number; backlogAgeS: number; addRate: number; dispatchRate: number } | { error: string }>
> {
  const svc = stack.temporalClient.connection.workflowService;
  const out: Record<
    string,
    { backlog: number; backlogAgeS: number; addRate: number; dispatchRate: number } | { error: string }
  > = {};
  for (const [name, type] of [
    ['workflow', temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
    ['activity', temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY],
  ] as const) {
    try {
      const r = await svc.describeTaskQueue({
        namespace: stack.temporal.namespace,
        taskQueue: { name: taskQueue },
        taskQueueType: type,
        reportStats: true,
      });
      const s = r.stats;
      out[name] = {
        backlog: Number(s?.approximateBacklogCount ?? 0),
        backlogAgeS: round(
          Number(s?.approximateBacklogAge?.seconds ?? 0) + (s?.approximateBacklogAge?.nanos ?? 0) / 1e9,
          1,
        ),
        addRate: round(s?.tasksAddRate ?? 0, 1),
        dispatchRate: round(s?.tasksDispatchRate ?? 0, 1),
      };
    } catch (e) {
      out[name] = { error: (e as Error).message };
    }
  }
  return out;
}

/** How the wait for every job to leave `submitting` went: ms waited, and the jobs still there at its end. */
interface Settle {
  /** The longest wait allowed, ms (0: no wait, the window opens at the last start). */
  limitMs: number;
  /** How long it waited, ms, to the 5-s poll that saw none left (so up to 5 s late). */
  ms: number;
  /** Jobs in `submitting` when the wait began. */
  submittingAtStart: number;
  /** Jobs still in `submitting` when the wait ended (0, or the limit was reached). */
  submittingAtEnd: number;
  /** Jobs that left `submitting` per second while settling (of those in it when the wait began). */
  perSecond: number;
}

/**
 * Waits until no job of `account` is `submitting` in the store (each has had its first workflow
 * task and its submit), polling every 5 s, for at most `limitMs` (with `limitMs` 0, one count and
 * no wait). The store row is what the product's state query reads, so this is the state users see.
 */
async function settleJobs(stack: Stack, account: string, limitMs: number, log: (l: string) => void): Promise<Settle> {
  const submitting = async () =>
    Number(
      (
        await stack.store.db
          .selectFrom('jobs')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('account', '=', account)
          .where('state', '=', 'submitting')
          .executeTakeFirstOrThrow()
      ).n,
    );
  const t0 = Date.now();
  const first = await submitting();
  let n = first;
  while (n > 0 && Date.now() - t0 < limitMs) {
    await new Promise((r) => setTimeout(r, Math.min(5_000, limitMs - (Date.now() - t0))));
    n = await submitting();
    log(`scale: settling ${Math.round((Date.now() - t0) / 1000)} s, ${n} still submitting`);
  }
  const ms = Date.now() - t0;
  return {
    limitMs,
    ms,
    submittingAtStart: first,
    submittingAtEnd: n,
    perSecond: ms > 0 ? round(((first - n) / ms) * 1000, 1) : 0,
  };
}

/** Runs the benchmark; returns the JSON written. */
export async function runScale(o: Options): Promise<Record<string, unknown>> {
  const deadlineMs = Math.round(o.deadlineMin * 60_000);
  const log = (l: string) => console.error(l);
  const quiet = await waitForQuietStart(o, log);
  const load = sampleLoad();
  const account = 'scale';
  const dynamicConfig = Object.fromEntries(
    o.dynamicConfig.map((kv) => [kv.slice(0, kv.indexOf('=')), JSON.parse(kv.slice(kv.indexOf('=') + 1)) as unknown]),
  );
  const stack = await startStack({
    name: 'scale',
    designs: [o.design],
    accounts: [{ name: account, profile: { concurrency: o.jobs + 100 } }],
    ui: o.ui,
    log,
    keepDir: o.keepDir,
    dynamicConfig,
    inMemory: o.db === 'memory',
  });
  try {
    const foreign = sampleForeignCpu(() => stack.ownProcesses());
    stack.sim.faults.add({ account, endpoint: 'submit', action: 'hold', holdIn: 'queued' });
    const statusTimes: number[] = [];
    // When the provider received each submit: where that job's poll schedule begins.
    const submitTimes: number[] = [];
    stack.sim.events.on('request', (e: SimRequestEvent) => {
      if (e.account !== account) return;
      if (e.endpoint === 'status') statusTimes.push(e.at);
      else if (e.endpoint === 'submit') submitTimes.push(e.at);
    });
    const worker = await stack.startWorker(o.design, {
      statusEveryMs: 500,
      maxCachedWorkflows: o.maxCachedWorkflows,
      cpuProfileDir: o.workerCpuProf ? path.resolve(o.workerCpuProf) : undefined,
      nodeArgs: o.workerNodeArgs.split(' ').filter(Boolean),
      env: Object.fromEntries(o.workerEnv.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
    });
    const procs: Measured[] = [{ name: 'worker', pid: worker.pid }, ...stack.processes()];
    const mem = sampleMemory(procs, 2_000);
    const probes: ListProbe[] = [];
    const gauges: { at: string; phase: string; gauges: WorkerGauges | undefined }[] = [];
    const backlogs: { at: string; phase: string; queues: Awaited<ReturnType<typeof backlog>> }[] = [];
    const startTimes: number[] = [];
    let started = 0;

    // ---- start them all ----
    const t0 = Date.now();
    const cpu0 = cpuSnapshot(procs);
    const queue = new PQueue({ concurrency: o.startConcurrency });
    const probeEvery = Math.max(1, Math.floor(o.jobs / 5));
    let lastLog = Date.now();
    let probing: Promise<unknown> = Promise.resolve();
    await Promise.all(
      Array.from({ length: o.jobs }, (_, i) =>
        queue.add(async () => {
          await stack.clients[o.design].startScrape({
            account,
            url: stack.pageUrl(i),
            key: `s-${i}`,
            ...(deadlineMs === DEFAULT_POLL_POLICY.deadlineMs ? {} : { policy: { deadlineMs } }),
          });
          startTimes.push(Date.now());
          started++;
          if (started % probeEvery === 0 && started < o.jobs) {
            const n = started;
            probing = probing.then(async () => {
              probes.push(await probeList(stack, 'starting', n));
              backlogs.push({
                at: new Date().toISOString(),
                phase: `starting (${n})`,
                queues: await backlog(stack, stack.taskQueue(o.design)),
              });
            });
          }
          if (Date.now() - lastLog > 15_000) {
            lastLog = Date.now();
            log(`scale: ${started}/${o.jobs} started (${Math.round((started / (Date.now() - t0)) * 1000)}/s)`);
          }
        }),
      ),
    );
    const startMs = Date.now() - t0;
    const cpuStart = cpuDelta(cpu0, cpuSnapshot(procs));
    await probing;
    log(`scale: ${o.jobs} started in ${(startMs / 1000).toFixed(1)} s`);

    // ---- optionally let every job reach its tracking loop, so the window sees waiting jobs only ----
    const settle = await settleJobs(stack, account, o.settleMin * 60_000, log);

    // ---- observe them waiting ----
    const w0 = Date.now();
    const wCpu0 = cpuSnapshot(procs);
    const p0 = await serverSnapshot(stack);
    const k0 = await workerSnapshot(worker.metricsUrl);
    const statusFrom = worker.statuses.length;
    const checksBefore = statusTimes.length;
    const probeTimes = [0.25, 0.5, 0.75, 1].map((f) => w0 + f * o.observeS * 1000);
    for (const at of probeTimes) {
      await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
      probes.push(await probeList(stack, 'waiting', o.jobs));
      backlogs.push({
        at: new Date().toISOString(),
        phase: 'waiting',
        queues: await backlog(stack, stack.taskQueue(o.design)),
      });
      gauges.push({
        at: new Date().toISOString(),
        phase: 'waiting',
        gauges: workerGauges(await workerSnapshot(worker.metricsUrl)),
      });
      log(
        `scale: waiting ${Math.round((Date.now() - w0) / 1000)} s, list ${probes.at(-1)!.listMs} ms, count ${probes.at(-1)!.count}`,
      );
    }
    const w1 = Date.now();
    const wCpu = cpuDelta(wCpu0, cpuSnapshot(procs));
    const p1 = await serverSnapshot(stack);
    const k1 = await workerSnapshot(worker.metricsUrl);
    const ns = stack.temporal.namespace;
    const taskQueue = stack.taskQueue(o.design);
    const persistence = persistenceDelta(p0, p1, ns);
    const serverScheduleToStart = {
      workflow: scheduleToStartDelta(p0, p1, ns, taskQueue, 'Workflow') ?? null,
      activity: scheduleToStartDelta(p0, p1, ns, taskQueue, 'Activity') ?? null,
    };
    const m = mem.stop();
    const waitStatuses = worker.statuses.slice(statusFrom).map((s) => s.status);
    const achieved = statusTimes.slice(checksBefore).filter((t) => t >= w0 && t <= w1).length;
    const sched = {
      initialDelayMs: DEFAULT_POLL_POLICY.initialDelayMs,
      maxDelayMs: DEFAULT_POLL_POLICY.maxDelayMs,
      multiplier: DEFAULT_POLL_POLICY.multiplier,
      jitter: 0,
    };
    // A job past its tracking deadline (the policy's, counted from the moment the task is known)
    // stops as `tracking_interrupted` and owes no more checks, so each job's demand ends there.
    const owed = (ms: number) => nominalChecksBy(sched, Math.min(ms, deadlineMs));
    const demandFrom = (times: readonly number[]) => times.reduce((n, s) => n + owed(w1 - s) - owed(w0 - s), 0);
    const demanded = demandFrom(startTimes);
    const demandedFromSubmits = demandFrom(submitTimes);
    const windowS = (w1 - w0) / 1000;
    const acts = waitStatuses.map((s) => s.numInFlightActivities);
    const tracked = worker.statuses.slice(statusFrom).map((s) => s.tracked ?? 0);
    const wfts = waitStatuses.map((s) => s.numInFlightWorkflowActivations);
    const waitSamples = worker.statuses.slice(statusFrom);
    const loops = waitSamples.map((s) => s.loop).filter((l): l is NonNullable<typeof l> => !!l);
    const eventLoop = loops.length
      ? {
          intervals: loops.length,
          intervalMs: round(mean(loops.map((l) => l.windowMs)), 0),
          utilization: {
            mean: round(mean(loops.map((l) => l.utilization)), 3),
            max: Math.max(...loops.map((l) => l.utilization)),
          },
          /** Median of the intervals' p50, the 99th percentile of the intervals' p99, the largest delay seen; ms beyond the 10-ms timer. */
          lagMs: {
            p50: percentile(
              loops.map((l) => l.lagMs.p50),
              50,
            ),
            p99: percentile(
              loops.map((l) => l.lagMs.p99),
              99,
            ),
            max: Math.max(...loops.map((l) => l.lagMs.max)),
          },
        }
      : null;
    const pollShare = (f: (s: (typeof waitStatuses)[number]) => boolean) =>
      waitStatuses.length ? round(waitStatuses.filter(f).length / waitStatuses.length, 2) : null;
    const sdk = {
      window: workerWindow(k0, k1, (w1 - w0) / 1000) ?? null,
      gauges,
      /** Share of the worker's status samples with a poll outstanding at the server (a poller waiting for a task: not short of pollers). */
      outstandingPollShare: {
        workflow: pollShare((s) => s.hasOutstandingWorkflowPoll),
        activity: pollShare((s) => s.hasOutstandingActivityPoll),
      },
      capacity: worker.capacity ?? null,
    };
    const states = await stack.store.db.selectFrom('jobs').select(['state']).where('account', '=', account).execute();
    const byState: Record<string, number> = {};
    for (const r of states) byState[r.state] = (byState[r.state] ?? 0) + 1;
    const last = waitStatuses.at(-1);
    const workerMemory = worker.statuses.at(-1)?.memory;

    const out = {
      benchmark: 'scale',
      options: o,
      machine: {
        start: quiet.start,
        end: machine(),
        underLoad: quiet.underLoad,
        load: load.stop(),
        foreign: foreign.stop(),
      },
      /** Worker log (WARN+): failed activity attempts, SQLite store errors. */
      workerLog: stack.workerLogCounts(),
      policy: `DEFAULT_POLL_POLICY: 2 s ×1.5 to 60 s, ±20 % jitter, tracking deadline ${o.deadlineMin} min; provider holds every job queued`,
      start: { jobs: o.jobs, ms: startMs, perSecond: round((o.jobs / startMs) * 1000, 1), cpuS: cpuStart },
      settle,
      storeStates: byState,
      waiting: {
        windowS: round(windowS, 1),
        cpuS: wCpu,
        coresUsed: Object.fromEntries(Object.entries(wCpu).map(([k, v]) => [k, round(v / windowS, 2)])),
        statusChecksPerSecond: {
          /**
           * The schedule counted from each job's start (the caller's view: a job not yet submitted
           * owes checks too). Both demands end at the tracking deadline, this one counted from the
           * start although a job's deadline counts from its submit: with a deadline inside the
           * window it ends each job's demand early by its wait in `submitting`.
           */
          demandedBySchedule: round(demanded / windowS, 1),
          /**
           * The schedule counted from each submit the provider received (the tracking loops' view;
           * a replayed submit of the same job counts twice, which only lowers the ratio).
           */
          demandedFromSubmits: round(demandedFromSubmits / windowS, 1),
          submits: submitTimes.length,
          achieved: round(achieved / windowS, 1),
        },
        activitySlotsInUse: {
          mean: round(mean(acts), 2),
          p99: percentile(acts, 99),
          max: Math.max(...acts),
          samples: acts.length,
        },
        /** Jobs in the worker's detached tracking loops (design v4; `inActivity`'s loops hold activity slots instead). */
        trackedLoops: { mean: round(mean(tracked), 1), max: Math.max(...tracked), last: tracked.at(-1) ?? null },
        workflowActivationsInFlight: { mean: round(mean(wfts), 2), p99: percentile(wfts, 99), max: Math.max(...wfts) },
        cachedWorkflows: last?.numCachedWorkflows ?? null,
        /** Server persistence (its SQLite) while waiting, the jobs' namespace: total operation time per second of wall time, and by operation. */
        serverPersistence: persistence
          ? {
              busySecondsPerSecond: round(persistence.totalS / windowS, 2),
              operationsPerSecond: round(persistence.operations / windowS, 1),
              bookkeepingPerSecond: round(persistence.bookkeeping / windowS, 1),
              byOp: persistence.byOp,
            }
          : null,
        /** The worker process's event loop (see `workerRuntime.ts`). */
        workerEventLoop: eventLoop,
        /** The SDK worker's own metrics: polls, empty polls, task latencies over the window; slot and poller gauges at each probe; its capacity options. */
        sdkWorker: sdk,
        /** Server-side schedule-to-start latency of the jobs' task queue (normal and sticky partitions), ms. */
        serverScheduleToStart,
        /** Server-side waits: a workflow's lock, history tasks queued inside the server (ms). */
        serverWaits: serverWaitsDelta(p0, p1) ?? null,
        /** Tasks added to the task queue by type and result: `sync_match` went straight to a waiting poll. */
        tasksAdded: tasksAddedDelta(p0, p1, ns) ?? null,
      },
      memoryMiB: {
        /**
         * The worker's `process.memoryUsage()` at its last status report, MiB: `rss` is the whole
         * process; `heapTotal`, `heapUsed` and `external` are its main thread's isolate only.
         */
        workerLast: workerMemory ? Object.fromEntries(Object.entries(workerMemory).map(([k, v]) => [k, mib(v)])) : null,
        max: Object.fromEntries(Object.entries(m.maxRssBytes).map(([k, v]) => [k, mib(v)])),
        last: Object.fromEntries(Object.entries(m.lastRssBytes).map(([k, v]) => [k, mib(v)])),
      },
      listQueries: probes,
      taskQueueBacklog: backlogs,
    };
    const waitingProbes = probes.filter((p) => p.phase === 'waiting');
    const lastGauges = gauges.at(-1)?.gauges;
    const fmtLatency = (l: { p50Ms: number; p99Ms: number; count: number } | null | undefined) =>
      l ? `${l.p50Ms} / ${l.p99Ms} ms (${l.count})` : '—';
    // What is saturated, from the figures above (thresholds: bench/README.md, "How each figure is taken").
    const saturated: string[] = [];
    const cores = out.waiting.coresUsed;
    const ownCores = (cores.worker ?? 0) + (cores.server ?? 0) + (cores.bench ?? 0);
    if (ownCores + out.machine.foreign.foreignCores >= 0.9 * out.machine.start.cores)
      saturated.push(
        `CPU: ${round(ownCores, 2)} cores used by the benchmark + ${out.machine.foreign.foreignCores} by others, of ${out.machine.start.cores}`,
      );
    if (persistence && persistence.totalS / windowS >= 0.9)
      saturated.push(
        `server persistence: ${round(persistence.totalS / windowS, 2)} operation-seconds per second (one SQLite writer)`,
      );
    if (eventLoop && eventLoop.utilization.mean >= 0.9)
      saturated.push(`worker event loop: ${eventLoop.utilization.mean} utilization`);
    if (eventLoop && eventLoop.lagMs.p99 >= 100) saturated.push(`worker event loop lag p99 ${eventLoop.lagMs.p99} ms`);
    for (const [type, name] of [
      ['WorkflowWorker', 'workflow task slots'],
      ['ActivityWorker', 'activity slots'],
    ] as const) {
      const full = gauges.filter((g) => g.gauges && g.gauges.slotsAvailable[type] === 0).length;
      if (full > 0) saturated.push(`${name}: none free at ${full} of ${gauges.length} probes`);
    }
    const wfBacklog = (backlogs.at(-1)?.queues.workflow as { backlog?: number } | undefined)?.backlog ?? 0;
    const wfPoll = sdk.outstandingPollShare.workflow;
    if (wfPoll !== null && wfBacklog > 0 && wfPoll < 0.5)
      saturated.push(
        `workflow pollers: a poll outstanding in only ${wfPoll} of samples while ${wfBacklog} workflow tasks wait`,
      );
    if (wfPoll !== null && wfBacklog > 0 && wfPoll >= 0.9)
      saturated.push(
        `workflow-task dispatch: the worker had a workflow poll (normal or sticky) outstanding in ${wfPoll} of samples while ${wfBacklog} workflow tasks waited on the normal queue, which ${lastGauges?.pollers.workflow_task ?? '?'} of its ${(lastGauges?.pollers.workflow_task ?? 0) + (lastGauges?.pollers.sticky_workflow_task ?? 0)} workflow pollers poll`,
      );
    const ui = waitingProbes
      .map((p) => p.ui)
      .filter((u): u is { ms: number; status: number; rows: number } => !!u && 'ms' in u);
    console.log(
      table(
        ['figure', 'value'],
        [
          [
            `design ${o.design}: jobs started (store states)`,
            `${o.jobs} (${Object.entries(byState)
              .map(([k, v]) => `${k} ${v}`)
              .join(', ')})`,
          ],
          [
            'time to start them all',
            `${(startMs / 1000).toFixed(1)} s (${out.start.perSecond}/s, ${o.startConcurrency} concurrent starts)`,
          ],
          [
            'settle before the window (limit; still submitting at its end)',
            settle.limitMs
              ? `${(settle.ms / 1000).toFixed(0)} s of ${settle.limitMs / 60_000} min; ${settle.submittingAtEnd} of ${settle.submittingAtStart} still submitting (${settle.perSecond}/s left it)`
              : 'none: the window starts at the last start',
          ],
          ['worker RSS (max / last)', `${out.memoryMiB.max.worker} / ${out.memoryMiB.last.worker} MiB`],
          [
            "worker memory at its last status after the window: main thread's V8 heap used / allocated, external (of which ArrayBuffers); whole process RSS",
            workerMemory
              ? `${mib(workerMemory.heapUsed)} / ${mib(workerMemory.heapTotal)}, ${mib(workerMemory.external)} (${mib(workerMemory.arrayBuffers)}) MiB; RSS ${mib(workerMemory.rss)} MiB`
              : '—',
          ],
          ['server RSS (max / last)', `${out.memoryMiB.max.server ?? '—'} / ${out.memoryMiB.last.server ?? '—'} MiB`],
          ['bench process RSS (sim + driver), max', `${out.memoryMiB.max.bench} MiB`],
          [
            'activity slots in use while waiting (mean / p99 / max)',
            `${out.waiting.activitySlotsInUse.mean} / ${out.waiting.activitySlotsInUse.p99} / ${out.waiting.activitySlotsInUse.max}`,
          ],
          [
            'jobs in detached tracking loops while waiting (mean / max / last)',
            `${out.waiting.trackedLoops.mean} / ${out.waiting.trackedLoops.max} / ${out.waiting.trackedLoops.last ?? '—'}`,
          ],
          [
            'workflow activations in flight (mean / max)',
            `${out.waiting.workflowActivationsInFlight.mean} / ${out.waiting.workflowActivationsInFlight.max}`,
          ],
          ['cached workflows on the worker', String(out.waiting.cachedWorkflows)],
          [
            'status checks/s demanded by the schedule, from the starts / from the submits received, vs achieved',
            `${out.waiting.statusChecksPerSecond.demandedBySchedule} / ${out.waiting.statusChecksPerSecond.demandedFromSubmits} (${out.waiting.statusChecksPerSecond.submits} submits) vs ${out.waiting.statusChecksPerSecond.achieved}`,
          ],
          [
            'server persistence while waiting: operation-seconds per second (ops/s)',
            out.waiting.serverPersistence
              ? `${out.waiting.serverPersistence.busySecondsPerSecond} (${out.waiting.serverPersistence.operationsPerSecond}/s; UpdateWorkflowExecution ${out.waiting.serverPersistence.byOp.UpdateWorkflowExecution?.meanMs ?? '—'} ms each)`
              : '—',
          ],
          [
            'cores used while waiting: worker / server / bench',
            `${out.waiting.coresUsed.worker} / ${out.waiting.coresUsed.server ?? '—'} / ${out.waiting.coresUsed.bench}`,
          ],
          [
            'worker event loop while waiting: utilization mean / max; lag p50 / p99 / max',
            eventLoop
              ? `${eventLoop.utilization.mean} / ${eventLoop.utilization.max}; ${eventLoop.lagMs.p50} / ${eventLoop.lagMs.p99} / ${eventLoop.lagMs.max} ms`
              : '—',
          ],
          [
            'SDK task slots used / available at the last probe (workflow, activity)',
            lastGauges
              ? `${lastGauges.slotsUsed.WorkflowWorker ?? '—'} / ${lastGauges.slotsAvailable.WorkflowWorker ?? '—'}, ${lastGauges.slotsUsed.ActivityWorker ?? '—'} / ${lastGauges.slotsAvailable.ActivityWorker ?? '—'}`
              : '—',
          ],
          [
            'SDK pollers at the last probe (workflow, sticky, activity); share of samples with a poll outstanding (workflow, activity)',
            `${lastGauges ? `${lastGauges.pollers.workflow_task ?? '—'}, ${lastGauges.pollers.sticky_workflow_task ?? '—'}, ${lastGauges.pollers.activity_task ?? '—'}` : '—'}; ${sdk.outstandingPollShare.workflow ?? '—'}, ${sdk.outstandingPollShare.activity ?? '—'}`,
          ],
          [
            'SDK polls/s (workflow, activity) and empty polls/s',
            sdk.window
              ? `${sdk.window.pollsPerSecond.PollWorkflowTaskQueue ?? 0}, ${sdk.window.pollsPerSecond.PollActivityTaskQueue ?? 0}; empty ${sdk.window.emptyPollsPerSecond.workflow}, ${sdk.window.emptyPollsPerSecond.activity}`
              : '—',
          ],
          [
            'schedule-to-start, server-side p50 / p99 (workflow tasks; activity tasks)',
            `${fmtLatency(serverScheduleToStart.workflow)}; ${fmtLatency(serverScheduleToStart.activity)}`,
          ],
          [
            'schedule-to-start, SDK-side p50 / p99 (workflow tasks; activity tasks)',
            sdk.window
              ? `${fmtLatency(sdk.window.workflowTaskScheduleToStart)}; ${fmtLatency(sdk.window.activityScheduleToStart)}`
              : '—',
          ],
          [
            'saturated while waiting (thresholds in bench/README.md)',
            saturated.length ? saturated.join('; ') : 'nothing measured here is saturated',
          ],
          [
            'list ScrapeState="pending" (page of 100), while waiting',
            `${waitingProbes.map((p) => `${p.listMs} ms`).join(', ')}`,
          ],
          [
            'count ScrapeState="pending" (and still "submitting"), while waiting',
            `${waitingProbes.map((p) => `${p.count} (${p.submitting}) in ${p.countMs} ms`).join(', ')}`,
          ],
          [
            'Web UI API list, while waiting',
            ui.length ? ui.map((u) => `${u.status} ${u.rows} rows in ${u.ms} ms`).join(', ') : 'UI off',
          ],
          ['task queue backlog at the end (workflow / activity)', JSON.stringify(backlogs.at(-1)?.queues ?? {})],
        ],
      ),
    );
    finishReport(
      'scale',
      out,
      `load (1 min) at start ${quiet.start.loadavg[0]}${quiet.underLoad ? ' — UNDER LOAD' : ''}; CPU of other processes during the run ${out.machine.foreign.foreignCores} cores (the benchmark's own ${out.machine.foreign.ownCores})`,
    );
    return out;
  } finally {
    await stack.close();
  }
}

runAsScript(
  'scale.ts',
  withLoadOptions(new Command('bench:scale'))
    .option('-n, --jobs <n>', 'jobs pending at once', '10000')
    .option('--start-concurrency <n>', 'concurrent start calls', '32')
    .option('--observe-s <s>', 'how long to watch the jobs wait after the last start', '180')
    .option(
      '--settle-min <min>',
      'before the window, wait up to this long for every job to leave `submitting` (0: no wait)',
      '0',
    )
    .option('--no-ui', 'headless dev server (no Web UI probe)')
    .option('--keep-dir', 'keep the temp directory')
    .option('--max-cached-workflows <n>', "the worker's sticky workflow cache (default: the product's)")
    .option(
      '--dynamic-config <KEY=JSON>',
      'dev server dynamic config (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('--db <file|memory>', 'dev server persistence', 'file')
    .option('--worker-node-args <args>', 'Node options for the worker process, e.g. --max-old-space-size=640', '')
    .option(
      '--worker-env <KEY=VALUE>',
      'environment for the worker process (repeatable), e.g. MALLOC_ARENA_MAX=2',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('--deadline-min <min>', "each job's tracking deadline, minutes (default the policy's)")
    .option(
      '--design <v4|inActivity>',
      'the product (v4) or the product with each tracking loop inside its activity (inActivity)',
      'v4',
    )
    .option(
      '--worker-cpu-prof <dir>',
      'write a V8 CPU profile of the worker process into this folder (what its JavaScript thread does)',
    ),
  (opts) => runScale(OptionsSchema.parse(opts)),
);
