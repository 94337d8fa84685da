/**
 * Cancelling a job whose provider task may still run although the job is final: `tracking_interrupted`
 * (tracking stopped at its deadline or after its failed reads) and `cancel_unconfirmed` (an earlier
 * cancel the provider never confirmed). The cancel starts a run resumed for it, which moves the row
 * to `cancelling` and asks the provider; with races (two cancels, a cancel and a `resume`, a cancel
 * by Update, signal or native cancellation arriving while the run records `tracking_interrupted`,
 * which the closing run hands to a run resumed to cancel), a provider whose cancel endpoint fails,
 * a task the provider already reported final, no worker running, another account, the CLI, a batch
 * and the caller's timeout. Each answer agrees with the row, the provider is asked once, and no row
 * is left non-final without a run.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobNotFoundError, jobIdFor, type CancelResult } from '../../src/client/index.js';
import { lastCancel } from '../../src/client/cancel.js';
import { startResumedRun } from '../../src/client/start.js';
import { isFinalState } from '../../src/model/states.js';
import { ScrapeState } from '../../src/workflows/searchAttributes.js';
import type { PollPolicy } from '../../src/model/types.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { providerCancelCalls, settle, startContextOf, waitRow, type Settled } from '../helpers/cancel.js';
import { runCli } from '../helpers/cli.js';
import { FAST_POLICY, startStack, waitFor, type Stack } from '../helpers/stack.js';

const POLICY: Partial<PollPolicy> = { ...FAST_POLICY, cancelConfirmDeadlineMs: 6_000 };
const RUN = randomUUID().slice(0, 6);

/** Holds the store write of `state` for `jobId` (beforeRecordState; `close`: beforeCloseAsCancelled) until released. */
const holds = new Map<string, { reached: () => void; gate: Promise<void>; release: () => void; hit: Promise<void> }>();
function holdRecord(jobId: string, state: string) {
  let release!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const hit = new Promise<void>((r) => (reached = r));
  const h = { reached, gate, release, hit };
  holds.set(`${jobId}|${state}`, h);
  return h;
}

const held: { release: () => void }[] = [];
let stack: Stack;
let pages: PageServer;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({
    profile: { concurrency: 100 },
    hooks: {
      beforeCloseAsCancelled: async (jobId) => {
        const h = holds.get(`${jobId}|close`);
        if (!h) return;
        holds.delete(`${jobId}|close`);
        held.push(h);
        h.reached();
        await h.gate;
      },
      beforeRecordState: async (jobId, state) => {
        // Held once: the local activity's next attempt (after its timeout) goes through.
        const h = holds.get(`${jobId}|${state}`);
        if (!h) return;
        holds.delete(`${jobId}|${state}`);
        held.push(h);
        h.reached();
        await h.gate;
      },
    },
  });
});

afterAll(async () => {
  for (const h of [...holds.values(), ...held]) h.release();
  await stack?.stop();
  await pages?.close();
});

function job(kind: string) {
  const tag = `ci-${kind}-${RUN}`;
  return { tag, jobId: jobIdFor('acme', tag), url: `${pages.pageUrl('aclu')}?${tag}` };
}

/** Starts job `j` (of {@link job}) with a 3-s tracking deadline, in batch `batchId` if given. */
function startWithDeadline(j: { tag: string; url: string }, batchId?: string) {
  const policy = { ...POLICY, deadlineMs: 3_000 };
  return stack.client.startScrape({ account: 'acme', url: j.url, key: j.tag, policy, ...(batchId ? { batchId } : {}) });
}

/** A job whose provider task runs on (never_finish) and whose tracking stopped at its deadline. */
async function interrupted(kind: string) {
  const j = job(kind);
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: j.tag, action: 'never_finish' });
  await startWithDeadline(j);
  const running = await waitRow(stack, j.jobId, (r) => r.provider_status === 'running', 'running at the provider');
  const s = await settle(stack, j.jobId, 30_000);
  expect(s.row.state).toBe('tracking_interrupted');
  return { ...j, taskId: running.task_id! };
}

/** The provider's cancel endpoint answers 503 for job `tag` until the fault is removed. */
function failCancels(tag: string) {
  return stack.sim.faults.add({
    account: 'acme',
    endpoint: 'cancel',
    urlContains: tag,
    action: 'error_5xx',
    status: 503,
  });
}

/** Starts job `j` on a task the provider completes but whose result cannot be read: tracking stops after two failed reads. */
function startUnreadable(j: { tag: string; url: string }) {
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: j.tag, action: 'bad_result' });
  const policy = { ...POLICY, deadlineMs: 60_000, failedReadLimit: 2, failedReadBudgetMs: 1_000 };
  return stack.client.startScrape({ account: 'acme', url: j.url, key: j.tag, policy });
}

/** Nothing was sent, and the row, the workflow's view and the Web UI's `ScrapeState` all still say `tracking_interrupted`. */
function expectLeftInterrupted(row: { state: string }, s: Settled, tag: string) {
  expect(row.state).toBe('tracking_interrupted');
  expect(s.view.state).toBe('tracking_interrupted');
  expect(s.scrapeState).toBe('tracking_interrupted');
  expect(providerCancelCalls(stack, tag)).toBe(0);
}

async function isRunning(jobId: string) {
  return (await stack.temporal.workflow.getHandle(jobId).describe()).status.name === 'RUNNING';
}

/** Waits until the job's workflow is closed and its row final; returns the row. */
async function quiet(jobId: string, timeoutMs = 45_000) {
  return waitFor(
    async () => {
      if (await isRunning(jobId)) return undefined;
      const r = await stack.store.jobs.get(jobId);
      // One more look: a run may have started between the two reads.
      if (await isRunning(jobId)) return undefined;
      return r;
    },
    timeoutMs,
    `${jobId} quiet`,
  );
}

/** An answer must not contradict the row (its state, and the report's outcome when final). */
function expectAnswerMatchesRow(answer: CancelResult, rowState: string, what: string) {
  if (answer.kind === 'observed' || answer.kind === 'already_final') {
    expect.soft(answer.state, `${what}: answer state vs row`).toBe(rowState);
    if (answer.report?.outcome && answer.report.outcome !== 'completed')
      expect.soft(answer.report.outcome, `${what}: report outcome vs row`).toBe(rowState);
  }
  if (answer.kind === 'not_running') expect.soft(isFinalState(rowState as never), `${what}: not_running`).toBe(false);
}

describe('cancel/resume of a tracking_interrupted job', () => {
  it('two cancels at once: one provider cancel, both answers say cancelled, no orphan', async () => {
    const j = await interrupted('two');
    const [a, b] = await Promise.all([
      stack.client.cancelScrape('acme', j.jobId, { reason: 'a', timeoutMs: 30_000 }),
      stack.client.cancelScrape('acme', j.jobId, { reason: 'b', timeoutMs: 30_000 }),
    ]);
    const row = await quiet(j.jobId);
    expect.soft(row.state).toBe('cancelled');
    expect.soft(providerCancelCalls(stack, j.tag)).toBe(1);
    expectAnswerMatchesRow(a, row.state, 'first');
    expectAnswerMatchesRow(b, row.state, 'second');
    expect.soft(stack.sim.getJob(j.taskId)?.status).toBe('cancelled');
  });

  it('a cancel and a resume at once: cancelled, one provider cancel, no orphan', async () => {
    const j = await interrupted('cancel-resume');
    const [c, r] = await Promise.allSettled([
      stack.client.cancelScrape('acme', j.jobId, { reason: 'c', timeoutMs: 30_000 }),
      stack.client.resume('acme', j.jobId),
    ]);
    const row = await quiet(j.jobId);
    expect.soft(row.state).toBe('cancelled');
    expect.soft(providerCancelCalls(stack, j.tag)).toBe(1);
    expect.soft(c.status).toBe('fulfilled');
    if (c.status === 'fulfilled') expectAnswerMatchesRow(c.value, row.state, 'cancel');
    void r;
  });

  it('a cancel (signal) then a resume: cancelled, one provider cancel', async () => {
    const j = await interrupted('signal-resume');
    const c = await stack.client.cancelScrape('acme', j.jobId, { reason: 's', wait: false });
    expect.soft(c.kind).toBe('requested');
    const r = await stack.client.resume('acme', j.jobId).catch((e: Error) => e);
    const row = await quiet(j.jobId);
    expect.soft(row.state, `resume answered ${r instanceof Error ? r.message : 'ok'}`).toBe('cancelled');
    expect.soft(providerCancelCalls(stack, j.tag)).toBe(1);
    expect.soft(stack.sim.getJob(j.taskId)?.status).toBe('cancelled');
  });

  it('a resume then a cancel: cancelled, one provider cancel, answer observed cancelled', async () => {
    const j = await interrupted('resume-cancel');
    await stack.client.resume('acme', j.jobId);
    const c = await stack.client.cancelScrape('acme', j.jobId, { reason: 'rc', timeoutMs: 30_000 });
    const row = await quiet(j.jobId);
    expect.soft(row.state).toBe('cancelled');
    expect.soft(c.kind).toBe('observed');
    expectAnswerMatchesRow(c, row.state, 'cancel');
    expect.soft(providerCancelCalls(stack, j.tag)).toBe(1);
  });

  it('another account: not found, nothing sent, nothing started', async () => {
    const j = await interrupted('other');
    await expect(stack.client.cancelScrape('globex', j.jobId, { timeoutMs: 10_000 })).rejects.toBeInstanceOf(
      JobNotFoundError,
    );
    await expect(stack.client.resume('globex', j.jobId)).rejects.toBeInstanceOf(JobNotFoundError);
    expect(await isRunning(j.jobId)).toBe(false);
    expect((await stack.store.jobs.get(j.jobId))?.state).toBe('tracking_interrupted');
    expect(providerCancelCalls(stack, j.tag)).toBe(0);
  });
});

describe('provider cancel endpoint fails', () => {
  for (const [name, fault] of [
    ['5xx every time', { action: 'error_5xx' as const, status: 503 }],
    ['404 every time', { action: 'not_found' as const }],
  ] as const) {
    it(`${name}: the task still runs, so the outcome is cancel_unconfirmed and the answer says the row's state`, async () => {
      const j = await interrupted(`ep-${name.split(' ')[0]}`);
      stack.sim.faults.add({ account: 'acme', endpoint: 'cancel', urlContains: j.tag, ...fault });
      const c = await stack.client.cancelScrape('acme', j.jobId, { reason: 'ep', timeoutMs: 60_000 });
      const row = await quiet(j.jobId, 60_000);
      expect.soft(stack.sim.getJob(j.taskId)?.status).toBe('running');
      expect.soft(row.state).toBe('cancel_unconfirmed');
      expectAnswerMatchesRow(c, row.state, 'cancel');
    });
  }
});

describe('provider already completed the task (status said completed, result unreadable)', () => {
  it('tracking_interrupted with provider_state completed, then a cancel: answer and row agree, no orphan', async () => {
    const j = job('bad-result');
    await startUnreadable(j);
    const s = await settle(stack, j.jobId, 40_000);
    expect(s.row.state).toBe('tracking_interrupted');
    expect(s.row.provider_state).toBe('completed');
    const c = await stack.client.cancelScrape('acme', j.jobId, { reason: 'br', timeoutMs: 40_000 });
    const row = await quiet(j.jobId, 60_000);
    const after = await settle(stack, j.jobId, 10_000);
    const tl = after.timeline.map((e) => `${e.type}:${e.state ?? ''}`).join(',');
    const facts = `answer ${JSON.stringify({ kind: c.kind, state: c.state, outcome: (c as { report?: { outcome?: string } }).report?.outcome })}; row ${row.state}; view ${after.view.state}; ScrapeState ${after.scrapeState}; run ${after.status}; timeline ${tl}`;
    expectAnswerMatchesRow(c, row.state, facts);
    expect.soft(after.view.state, `workflow view vs row: ${facts}`).toBe(row.state);
    expect.soft(after.scrapeState, `ScrapeState vs row: ${facts}`).toBe(row.state);
    expect.soft(providerCancelCalls(stack, j.tag)).toBe(0);
    // Nothing may still run there: no run is started, the job stays resumable to read its result.
    expect(c).toMatchObject({ kind: 'already_final', state: 'tracking_interrupted' });
    expect(row.state).toBe('tracking_interrupted');
  });
});

describe('a cancel racing the deadline that records tracking_interrupted', () => {
  it('a cancel (Update) arriving while the run records tracking_interrupted is refused by the closing run, then stops the task through a resumed run', async () => {
    const j = job('race-update');
    stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: j.tag, action: 'never_finish' });
    const h = holdRecord(j.jobId, 'tracking_interrupted');
    await startWithDeadline(j);
    const running = await waitRow(stack, j.jobId, (r) => r.provider_status === 'running', 'running');
    await h.hit; // the run has moved to tracking_interrupted; its store write is held
    const answer = stack.client.cancelScrape('acme', j.jobId, { reason: 'race', timeoutMs: 30_000 });
    h.release();
    const c = await answer;
    const row = await quiet(j.jobId, 60_000);
    // Before: `already_final` (or `not_running` while the write was held), 0 provider cancels.
    expect(c).toMatchObject({ kind: 'observed', state: 'cancelled' });
    expect(row.state).toBe('cancelled');
    expect(stack.sim.getJob(running.task_id!)?.status).toBe('cancelled');
    expect(providerCancelCalls(stack, j.tag)).toBe(1);
  });
});

/** A job whose run has moved to tracking_interrupted at its deadline while the task runs on; the store write is held. */
async function closingInterrupted(kind: string) {
  const j = job(kind);
  stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: j.tag, action: 'never_finish' });
  const h = holdRecord(j.jobId, 'tracking_interrupted');
  await startWithDeadline(j);
  const running = await waitRow(stack, j.jobId, (r) => r.provider_status === 'running', 'running');
  await h.hit;
  return { ...j, taskId: running.task_id!, release: h.release };
}

describe('a cancel signal or native cancellation racing the deadline that records tracking_interrupted', () => {
  // Before: the closing run dropped the request; the job stayed tracking_interrupted with 0 provider
  // cancels while the task ran on, and `--no-wait` had answered `requested`.
  it('signal (cancel --no-wait): the closing run hands the request to a run resumed to cancel; cancelled, one provider cancel', async () => {
    const j = await closingInterrupted('race-signal');
    const answer = await stack.client.cancelScrape('acme', j.jobId, { reason: 'race-signal', wait: false });
    j.release();
    expect(answer.kind).toBe('requested');
    const row = await quiet(j.jobId, 60_000);
    expect(row.state).toBe('cancelled');
    expect(stack.sim.getJob(j.taskId)?.status).toBe('cancelled');
    expect(providerCancelCalls(stack, j.tag)).toBe(1);
    expect(await lastCancel(stack.store, j.jobId, true)).toMatchObject({
      reason: 'race-signal',
      via: 'signal',
      outcome: 'cancelled',
    });
  });

  it("native (the Web UI's button): the same, and the run that carried it out closes Canceled", async () => {
    const j = await closingInterrupted('race-native');
    await stack.temporal.workflow.getHandle(j.jobId).cancel();
    j.release();
    const row = await quiet(j.jobId, 60_000);
    expect(row.state).toBe('cancelled');
    expect(stack.sim.getJob(j.taskId)?.status).toBe('cancelled');
    expect(providerCancelCalls(stack, j.tag)).toBe(1);
    expect(await lastCancel(stack.store, j.jobId, true)).toMatchObject({ via: 'native', outcome: 'cancelled' });
    const d = await stack.temporal.workflow.getHandle(j.jobId).describe();
    expect(d.status.name).toBe('CANCELLED');
  });
});

describe('a cancel signal as tracking stops on a task the provider reported completed (its result unreadable)', () => {
  it('nothing is handed over: one run, no provider cancel, the job stays tracking_interrupted (resumable), and the Web UI agrees', async () => {
    const j = job('race-badres');
    const h = holdRecord(j.jobId, 'tracking_interrupted');
    await startUnreadable(j);
    await h.hit; // the result reads of a completed task failed: the run moved to tracking_interrupted
    await stack.client.cancelScrape('acme', j.jobId, { reason: 'badres', wait: false });
    h.release();
    const row = await quiet(j.jobId, 60_000);
    const s = await settle(stack, j.jobId, 10_000);
    const runs: string[] = [];
    for await (const r of stack.temporal.workflow.list({ query: `WorkflowId = "${j.jobId}"` }))
      runs.push(r.status.name);
    // Before: the run continued as new to cancel it; the new run found nothing to stop and ended with
    // its view and ScrapeState `cancel_unconfirmed` while the row stayed `tracking_interrupted`.
    expect(runs).toHaveLength(1);
    expectLeftInterrupted(row, s, j.tag);
  });
});

describe('a run resumed to cancel a task the provider already reported completed', () => {
  // As a hand-over decided on an outcome that lacked the provider's state could start it (a
  // polling activity of the previous release, the workflow's own deadline backstop).
  it('sends nothing and keeps the row state: row, view and the Web UI agree, the run closes', async () => {
    const j = job('resumed-badres');
    await startUnreadable(j);
    const before = (await settle(stack, j.jobId, 40_000)).row;
    expect(before).toMatchObject({ state: 'tracking_interrupted', provider_state: 'completed' });
    await startResumedRun(startContextOf(stack), before, { pendingCancel: { reason: 'stop it', requestedBy: 'acme' } });
    const row = await quiet(j.jobId, 60_000);
    const s = await settle(stack, j.jobId, 10_000);
    // Before: the run ended with its view and ScrapeState `cancel_unconfirmed`, the row `tracking_interrupted`.
    expectLeftInterrupted(row, s, j.tag);
  });
});

describe('more failure paths', () => {
  it('the task completed at the provider after tracking stopped: a cancel answers completed, the result is written once, row and answer agree', async () => {
    const j = job('done-later');
    stack.sim.faults.add({
      account: 'acme',
      endpoint: 'submit',
      urlContains: j.tag,
      action: 'hold',
      holdIn: 'running',
    });
    await startWithDeadline(j);
    const running = await waitRow(stack, j.jobId, (r) => r.provider_status === 'running', 'running');
    const s = await settle(stack, j.jobId, 30_000);
    expect(s.row.state).toBe('tracking_interrupted');
    stack.sim.release(running.task_id!);
    await waitFor(() => stack.sim.getJob(running.task_id!)?.status === 'completed', 30_000, 'completed at the sim');
    const c = await stack.client.cancelScrape('acme', j.jobId, { reason: 'dl', timeoutMs: 30_000 });
    const row = await quiet(j.jobId);
    expect.soft(row.state, `answer ${JSON.stringify(c)}`).toBe('completed');
    expectAnswerMatchesRow(c, row.state, 'cancel');
    expect.soft(await stack.store.results.count({ jobId: j.jobId })).toBe(1);
  });

  it('no worker running: the cancel of a tracking_interrupted job is queued in a resumed run, so the answer must not be already_final tracking_interrupted', async () => {
    const j = await interrupted('no-worker');
    await stack.stopWorker();
    let c: CancelResult | undefined;
    try {
      c = await stack.client.cancelScrape('acme', j.jobId, { reason: 'nw', timeoutMs: 4_000 });
      expect.soft(await isRunning(j.jobId), 'a resumed run waits for a worker').toBe(true);
      // The Web UI shows the job being cancelled (before: `pending`, a state it was not in).
      const sa = (await stack.temporal.workflow.getHandle(j.jobId).describe()).typedSearchAttributes;
      expect.soft(sa.get(ScrapeState)).toBe('cancelling');
    } finally {
      await stack.startWorker();
    }
    const row = await quiet(j.jobId, 60_000);
    expect.soft(row.state).toBe('cancelled');
    expect.soft(providerCancelCalls(stack, j.tag)).toBe(1);
    expect
      .soft(
        c,
        `answer while no worker ran ${JSON.stringify(c && { kind: c.kind, state: c.state })}; the row then became ${row.state}`,
      )
      .toMatchObject({ kind: 'requested' });
  });
});

describe('the CLI', () => {
  it('cancel --json of a tracking_interrupted job: observed cancelled, one provider cancel', async () => {
    const j = await interrupted('cli');
    const r = await runCli(['cancel', j.jobId, '--json', '--wait-s', '30'], { config: stack.configFile });
    const row = await quiet(j.jobId);
    expect.soft(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout || '{}') as CancelResult;
    expect.soft(row.state).toBe('cancelled');
    expectAnswerMatchesRow(out, row.state, 'cli');
    expect.soft(out.kind).toBe('observed');
    expect.soft(providerCancelCalls(stack, j.tag)).toBe(1);
  });
});

describe('batch cancel', () => {
  it('a batch with a tracking_interrupted job and a running job: both cancelled, one provider cancel each, answers match rows', async () => {
    const batchId = `cib-${RUN}`;
    const a = job('batch-int');
    const b = job('batch-run');
    for (const x of [a, b])
      stack.sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: x.tag, action: 'never_finish' });
    await startWithDeadline(a, batchId);
    await waitRow(stack, a.jobId, (r) => r.provider_status === 'running', 'a running');
    expect((await settle(stack, a.jobId, 30_000)).row.state).toBe('tracking_interrupted');
    await stack.client.startScrape({ account: 'acme', url: b.url, key: b.tag, batchId, policy: POLICY });
    await waitRow(stack, b.jobId, (r) => r.provider_status === 'running', 'b running');
    const out = await stack.client.cancelBatch('acme', batchId, { reason: 'batch', timeoutMs: 30_000 });
    for (const x of [a, b]) {
      const row = await quiet(x.jobId);
      const line = out.find((o) => o.jobId === x.jobId);
      expect.soft(row.state, `${x.tag}: ${JSON.stringify(line?.result)}`).toBe('cancelled');
      if (line && line.result.kind !== 'error') expectAnswerMatchesRow(line.result, row.state, x.tag);
      expect.soft(providerCancelCalls(stack, x.tag), x.tag).toBe(1);
    }
  });
});

describe('after an unconfirmed cancel of a tracking_interrupted job', () => {
  it('the provider cancel endpoint recovers: a second cancel asks again and stops the task that ran on', async () => {
    const j = await interrupted('recover');
    const fault = failCancels(j.tag);
    const first = await stack.client.cancelScrape('acme', j.jobId, { reason: 'first', timeoutMs: 60_000 });
    expect((await quiet(j.jobId, 60_000)).state).toBe('cancel_unconfirmed');
    expect(first).toMatchObject({ kind: 'observed', state: 'cancel_unconfirmed' });
    expect(stack.sim.getJob(j.taskId)?.status).toBe('running');
    stack.sim.faults.remove(fault);
    // Before: `already_final`, and `resume` refused a `cancel_unconfirmed` job: the task ran on for good.
    const second = await stack.client.cancelScrape('acme', j.jobId, { reason: 'second', timeoutMs: 30_000 });
    const row = await quiet(j.jobId, 60_000);
    // The report names this request and its door (before: `via: signal`, the resumed run's input).
    expect(second).toMatchObject({
      kind: 'observed',
      state: 'cancelled',
      report: { outcome: 'cancelled', reason: 'second', via: 'update' },
    });
    expect(row.state).toBe('cancelled');
    expect(stack.sim.getJob(j.taskId)?.status).toBe('cancelled');
    expect(await stack.client.cancelScrape('acme', j.jobId)).toMatchObject({
      kind: 'already_final',
      state: 'cancelled',
    });
  });
});

describe("the caller's timeout bounds every wait", () => {
  it('the run that ended the job has not closed: the answer is conflict within timeoutMs, nothing sent', async () => {
    const j = await interrupted('budget');
    const fault = failCancels(j.tag);
    const h = holdRecord(j.jobId, 'close'); // the run resumed to cancel stays open after its outcome
    const first = await stack.client.cancelScrape('acme', j.jobId, { reason: 'first', timeoutMs: 60_000 });
    expect(first).toMatchObject({ kind: 'observed', state: 'cancel_unconfirmed' });
    await h.hit;
    stack.sim.faults.remove(fault);
    const calls = providerCancelCalls(stack, j.tag);
    const second = stack.client.cancelScrape('acme', j.jobId, { reason: 'second', timeoutMs: 2_000 });
    // Before: the call waited (up to 30 s) for the run to close, whatever its timeout: here the held
    // close's attempt timed out meanwhile, and it answered `observed` after a second round.
    await expect(second).rejects.toMatchObject({ code: 'conflict' });
    expect(providerCancelCalls(stack, j.tag)).toBe(calls);
    h.release();
    expect((await quiet(j.jobId, 60_000)).state).toBe('cancel_unconfirmed');
  });
});
