/**
 * Running a set of scenarios on one stack at once: each scenario is a number of jobs of one
 * account (its own simulator profile, so provider counters are per scenario), one polling design,
 * one provider entry (`reference` = polling only, `reference_wh` = with webhooks) and one poll
 * policy. Shared by the politeness, history and latency benchmarks.
 */
import PQueue from 'p-queue';
import { isFinalState } from '../../src/model/states.js';
import type { PollPolicy } from '../../src/model/types.js';
import type { Design, Stack } from './stack.js';

/** One scenario. */
export interface Scenario {
  /** Label in tables, e.g. `1 s · v4`. */
  label: string;
  /** Simulator account (and ours); one per scenario. */
  account: string;
  design: Design;
  provider: 'reference' | 'reference_wh';
  /** Poll policy overrides (ms). */
  policy: Partial<PollPolicy>;
  jobs: number;
  /** Factor applied to provider time and poll delays (1 = real time). */
  timeScale: number;
  /** Provider time of each job in real (unscaled) ms, for reports. */
  providerMs: number;
}

/** Job IDs of every scenario, by label. */
export type ScenarioJobs = Record<string, string[]>;

/** Starts every job of every scenario (interleaved), `concurrency` start calls at a time. */
export async function startScenarios(
  stack: Stack,
  scenarios: readonly Scenario[],
  concurrency = 16,
): Promise<ScenarioJobs> {
  const out: ScenarioJobs = Object.fromEntries(scenarios.map((s) => [s.label, [] as string[]]));
  const queue = new PQueue({ concurrency });
  const max = Math.max(...scenarios.map((s) => s.jobs));
  let page = 0;
  const tasks: Promise<unknown>[] = [];
  for (let i = 0; i < max; i++) {
    for (const s of scenarios) {
      if (i >= s.jobs) continue;
      const n = page++;
      tasks.push(
        queue.add(async () => {
          const ref = await stack.clients[s.design].startScrape({
            account: s.account,
            provider: s.provider,
            url: stack.pageUrl(n),
            key: `${s.account}-${i}`,
            policy: s.policy,
          });
          out[s.label]!.push(ref.jobId);
        }),
      );
    }
  }
  await Promise.all(tasks);
  return out;
}

/**
 * Waits until every job is in a final state in the store, or its workflow has closed without
 * reaching one (counted as `workflow_<status>`), or `timeoutMs` passes; logs progress.
 */
export async function waitFinal(
  stack: Stack,
  jobIds: readonly string[],
  timeoutMs: number,
  log: (l: string) => void,
): Promise<{ final: number; states: Record<string, number> }> {
  const until = Date.now() + timeoutMs;
  let lastLog = 0;
  let lastDescribe = 0;
  const closed = new Map<string, string>();
  for (;;) {
    const states: Record<string, number> = {};
    let final = 0;
    const open: string[] = [];
    for (let i = 0; i < jobIds.length; i += 500) {
      const rows = await stack.store.db
        .selectFrom('jobs')
        .select(['id', 'state'])
        .where('id', 'in', jobIds.slice(i, i + 500))
        .execute();
      for (const r of rows) {
        const st = isFinalState(r.state) ? r.state : (closed.get(r.id) ?? r.state);
        states[st] = (states[st] ?? 0) + 1;
        if (isFinalState(r.state) || closed.has(r.id)) final++;
        else open.push(r.id);
      }
    }
    if (final >= jobIds.length || Date.now() > until) return { final, states };
    // A workflow that closed without a final store state (failed, terminated) will never get one.
    if (open.length <= 50 && Date.now() - lastDescribe > 10_000) {
      lastDescribe = Date.now();
      for (const id of open) {
        try {
          const d = await stack.temporalClient.workflow.getHandle(id).describe();
          if (d.status.name !== 'RUNNING') closed.set(id, `workflow_${d.status.name.toLowerCase()}`);
        } catch {
          // not started yet
        }
      }
    }
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(
        `${final}/${jobIds.length} final (${Object.entries(states)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')})`,
      );
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Waits until no workflow on `taskQueue` is running, as visibility counts them (polled every
 * 250 ms), for at most `timeoutMs`: a job's last workflow task (its completion) comes after its
 * work is done. Resolves the ms waited, or null when some were still running at the timeout.
 */
export async function waitClosed(stack: Stack, taskQueue: string, timeoutMs: number): Promise<number | null> {
  const t0 = Date.now();
  const svc = stack.temporalClient.connection.workflowService;
  for (;;) {
    const r = await svc.countWorkflowExecutions({
      namespace: stack.temporal.namespace,
      query: `TaskQueue = "${taskQueue}" AND ExecutionStatus = "Running"`,
    });
    if (Number(r.count ?? 0) === 0) return Date.now() - t0;
    if (Date.now() - t0 > timeoutMs) return null;
    await new Promise((res) => setTimeout(res, 250));
  }
}
