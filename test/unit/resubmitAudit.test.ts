/**
 * The audit after a resubmit (`src/activities/submit/resubmitAudit.ts`) and the operator’s resolve against a late answer (`adopt.ts`), over a faked activity kit: the
 * provider's lookups and cancel are stubs, the store's timeline an array. What it reads, when, and
 * what it does to a first submission the lookups hid past their declared lag.
 */
import { describe, expect, it } from 'vitest';
import type { ActivityKit } from '../../src/activities/context.js';
import type { TrackStatusInput } from '../../src/activities/tracking/pollTypes.js';
import { adoptTask } from '../../src/activities/submit/adopt.js';
import { auditResubmit } from '../../src/activities/submit/resubmitAudit.js';
import type { Candidate, LookupReading } from '../../src/model/evidence.js';
import { ProviderError } from '../../src/providers/shared/errors.js';
import type { JobRow } from '../../src/store/index.js';

const T0 = Date.parse('2026-12-02T07:00:00Z');

interface Fake {
  kit: ActivityKit;
  events: { type: string; detail: Record<string, unknown> }[];
  incidents: { kind: string; message: string }[];
  cancels: string[];
  reads: number;
  timelineReads: number;
}

/** A kit whose lookups list `candidates` (or throw `readError`), whose timeline starts with `timeline`, and whose tasks `bound` belong to other jobs. */
function fake(o: {
  candidates?: Candidate[];
  readError?: boolean;
  incomplete?: boolean;
  /** Cancels of these tasks fail this many times. */
  cancelFails?: number;
  timeline?: { type: string; at: number; detail?: Record<string, unknown> }[];
  bound?: string[];
  /** The attempt's abort signal (`kit.signal()`). */
  signal?: AbortSignal;
  /** Told of each cancel asked, before it answers. */
  onCancel?: (taskId: string) => void;
}): Fake {
  const f: Fake = {
    events: [],
    incidents: [],
    cancels: [],
    reads: 0,
    timelineReads: 0,
    kit: undefined as unknown as ActivityKit,
  };
  const timeline = (o.timeline ?? [{ type: 'reconcile_absent', at: T0 }]).map((e) => ({
    type: e.type,
    at: new Date(e.at).toISOString(),
    detail: JSON.stringify(e.detail ?? {}),
  }));
  const adapter = {
    evidence: {
      replay: 'none',
      lookups: [
        {
          name: 'GET /runs',
          shows: ['queued', 'running', 'finished'],
          finishedForMs: null,
          lagMs: 10_000,
          match: 'strong',
        },
      ],
      taskScope: 'credential',
      source: 'test',
    },
    async findSubmitted(): Promise<LookupReading[]> {
      f.reads++;
      if (o.readError) throw new ProviderError('transient', 'GET /runs answered 503', { httpStatus: 503 });
      return [
        {
          lookup: 'GET /runs',
          available: true,
          complete: o.incomplete !== true,
          candidates: o.candidates ?? [],
          at: new Date().toISOString(),
        },
      ];
    },
    async cancel(taskId: string) {
      f.cancels.push(taskId);
      o.onCancel?.(taskId);
      if ((o.cancelFails ?? 0) > 0) {
        o.cancelFails!--;
        throw new ProviderError('transient', 'POST /abort answered 503', { httpStatus: 503 });
      }
      return { accepted: true, providerStatus: 'ABORTING' };
    },
  };
  const resolved = {
    adapter,
    apiKey: 'k',
    entry: { submitTimeoutMs: 3_000 },
    providerAccount: 'apify@h#f',
    providerKey: 'apify@h#f',
  };
  f.kit = {
    deps: { providers: { resolve: () => resolved } },
    store: {
      findings: {
        timeline: async () => [
          ...(f.timelineReads++, []),
          ...timeline,
          ...f.events.map((e) => ({ type: e.type, at: new Date().toISOString(), detail: JSON.stringify(e.detail) })),
        ],
        appendEvent: async (_job: string, type: string, _state: unknown, detail: Record<string, unknown>) =>
          void f.events.push({ type, detail }),
        recordIncident: async (i: { kind: string; message: string }) => void f.incidents.push(i),
      },
      jobs: {
        tasksBoundElsewhere: async (q: { taskIds: string[] }) =>
          new Map(q.taskIds.filter((t) => o.bound?.includes(t)).map((t) => [t, 'scrape:acme:other'])),
      },
    },
    call: async (_p: string, _a: string, fn: (r: typeof resolved) => Promise<unknown>) => fn(resolved),
    secrets: () => [],
    signal: () => o.signal,
    taskCall: (p: typeof resolved) => ({ apiKey: p.apiKey, secrets: [] }),
  } as unknown as ActivityKit;
  return f;
}

const row = {
  submit_attempts: 2,
  account: 'acme',
  idem_key: 'k1',
  created_at: new Date(T0 - 5_000).toISOString(),
  provider_account: 'apify@h#f',
} as unknown as JobRow;
const input = {
  jobId: 'scrape:acme:k1',
  provider: 'apify',
  account: 'acme',
  taskId: 'ours',
  request: { url: 'https://e.example/' },
} as unknown as TrackStatusInput;
const strong = (taskId: string, providerStatus = 'RUNNING'): Candidate => ({
  taskId,
  providerStatus,
  match: 'strong',
  why: 'INPUT carries our reference',
});
const weak = (taskId: string): Candidate => ({ taskId, providerStatus: 'listed', match: 'weak', why: 'same URL' });

describe('the audit after a resubmit', () => {
  it('a job submitted once, or never proved absent, is skipped without a provider read', async () => {
    const f = fake({ candidates: [strong('first')] });
    expect(await auditResubmit(f.kit, { ...row, submit_attempts: 1 } as JobRow, input, true)).toEqual({
      kind: 'skipped',
    });
    const g = fake({ candidates: [strong('first')], timeline: [{ type: 'submit_ambiguous', at: T0 }] });
    expect(await auditResubmit(g.kit, row, input, true)).toEqual({ kind: 'skipped' });
    expect([f.reads, g.reads]).toEqual([0, 0]);
  });

  it('a job submitted twice without a proof of absence (a refused submit sent again) reads its timeline once per worker, not at every check', async () => {
    const f = fake({ candidates: [strong('first')], timeline: [{ type: 'submit_refused', at: T0 }] });
    const audit = auditResubmit.bind(null, f.kit);
    for (let i = 0; i < 5; i++) expect(await audit(row, input, i === 4)).toEqual({ kind: 'skipped' });
    expect([f.timelineReads, f.reads]).toEqual([1, 0]);
  });

  it('reads nothing before the window the proof relied on has passed again, unless the job has ended', async () => {
    const f = fake({ candidates: [], timeline: [{ type: 'reconcile_absent', at: Date.now() }] });
    expect(await auditResubmit(f.kit, row, input, false)).toEqual({ kind: 'not_due' });
    expect(f.reads).toBe(0);
    expect(await auditResubmit(f.kit, row, input, true)).toMatchObject({ kind: 'audited' });
    expect(f.events.at(-1)).toMatchObject({
      type: 'resubmit_audit',
      detail: { final: true, note: expect.stringMatching(/before the window/) },
    });
  });

  it('a running strong match is our hidden first submission: reported as a duplicate paid job and cancelled; our own task and another job’s are left alone', async () => {
    const f = fake({ candidates: [strong('ours'), strong('first'), strong('theirs')], bound: ['theirs'] });
    expect(await auditResubmit(f.kit, row, input, false)).toEqual({
      kind: 'audited',
      duplicates: ['first'],
      possible: [],
    });
    expect(f.cancels).toEqual(['first']);
    expect(f.events.map((e) => e.type)).toEqual(['duplicate_provider_job', 'resubmit_audit']);
    expect(f.events[0]!.detail).toMatchObject({ taskId: 'first', ours: 'ours', cancel: { accepted: true } });
    expect(f.incidents).toEqual([
      expect.objectContaining({ kind: 'duplicate_provider_job', message: expect.stringContaining('first') }),
    ]);
  });

  it('a finished strong match is reported (and asked to cancel: a finished one answers that it is final); a weak or unreadable one is a possible duplicate for an operator, never cancelled', async () => {
    const unreadable: Candidate = {
      taskId: 'no-input',
      providerStatus: 'RUNNING',
      match: 'unreadable',
      why: 'INPUT answered 404',
    };
    const f = fake({ candidates: [strong('first', 'SUCCEEDED'), weak('lookalike'), unreadable] });
    expect(await auditResubmit(f.kit, row, input, true)).toEqual({
      kind: 'audited',
      duplicates: ['first'],
      possible: ['lookalike', 'no-input'],
    });
    expect(f.cancels).toEqual(['first']);
    expect(f.events.map((e) => e.type)).toEqual(['duplicate_provider_job', 'possible_duplicate', 'resubmit_audit']);
  });

  it('at most two reads: one past the window, one more at the end only if the first found nothing; then never again', async () => {
    const f = fake({ candidates: [] });
    const audit = auditResubmit.bind(null, f.kit);
    expect(await audit(row, input, false)).toMatchObject({ kind: 'audited', duplicates: [] });
    expect(await audit(row, input, false)).toEqual({ kind: 'skipped' });
    expect(await audit(row, input, true)).toMatchObject({ kind: 'audited' });
    expect(await audit(row, input, true)).toEqual({ kind: 'skipped' });
    expect(f.reads).toBe(2);
    const g = fake({ candidates: [weak('lookalike')] });
    await auditResubmit(g.kit, row, input, false);
    expect(await auditResubmit(g.kit, row, input, true)).toEqual({ kind: 'skipped' });
    expect(g.reads).toBe(1);
  });

  it('a lookup that fails is recorded, never thrown, and uses up the read past the window (no read at every check); the read at the end remains', async () => {
    const f = fake({ readError: true });
    const audit = auditResubmit.bind(null, f.kit);
    expect(await audit(row, input, false)).toMatchObject({ kind: 'audited', duplicates: [] });
    for (let i = 0; i < 5; i++) expect(await audit(row, input, false)).toEqual({ kind: 'skipped' });
    expect(await audit(row, input, true)).toMatchObject({ kind: 'audited', duplicates: [] });
    expect(f.reads).toBe(2);
    expect(f.events.map((e) => [e.type, e.detail.final, (e.detail.error as { kind?: string })?.kind])).toEqual([
      ['resubmit_audit', false, 'transient'],
      ['resubmit_audit', true, 'transient'],
    ]);
  });

  it('a reading that could not see everything (read only up to its bound) is inconclusive, never clean; the read at the end still happens', async () => {
    const f = fake({ incomplete: true });
    const audit = auditResubmit.bind(null, f.kit);
    await audit(row, input, false);
    expect(f.events.at(-1)).toMatchObject({ type: 'resubmit_audit', detail: { inconclusive: true, duplicates: [] } });
    await audit(row, input, true);
    expect(f.reads).toBe(2);
  });

  it('a duplicate whose cancel got no answer is asked again at the next checks, at most three more times, without reading the lookups again', async () => {
    const f = fake({ candidates: [strong('first')], cancelFails: 2 });
    const audit = auditResubmit.bind(null, f.kit);
    await audit(row, input, false);
    expect(f.events.at(-1)).toMatchObject({ type: 'resubmit_audit', detail: { cancelPending: ['first'] } });
    await audit(row, input, false); // fails again
    await audit(row, input, false); // answered
    await audit(row, input, false); // nothing left
    expect(f.cancels).toEqual(['first', 'first', 'first']);
    expect(f.reads).toBe(1);
    expect(f.events.filter((e) => e.type === 'duplicate_cancel_retry').map((e) => e.detail.stillPending)).toEqual([
      ['first'],
      [],
    ]);
    const g = fake({ candidates: [strong('first')], cancelFails: 10 });
    const again = auditResubmit.bind(null, g.kit);
    for (let i = 0; i < 8; i++) await again(row, input, false);
    expect(g.cancels).toHaveLength(4);
  });
  it('at the job’s end, where no later check would ask again, an unanswered cancel is asked again at once, twice', async () => {
    const f = fake({ candidates: [strong('first')], cancelFails: 2 });
    await auditResubmit(f.kit, row, input, true);
    expect(f.cancels).toEqual(['first', 'first', 'first']);
    expect(f.events.at(-1)).toMatchObject({ type: 'resubmit_audit', detail: { final: true, cancelPending: [] } });
  });
  it('an attempt stopped while waiting to ask a cancel again ends its wait at once and asks no more: the duplicate stays pending', async () => {
    const attempt = new AbortController();
    // The first cancel fails; the attempt is stopped on the next turn, inside the back-off wait.
    const f = fake({
      candidates: [strong('first')],
      cancelFails: 99,
      signal: attempt.signal,
      onCancel: () => void setImmediate(() => attempt.abort()),
    });
    let settled = false;
    const audited = auditResubmit(f.kit, row, input, true).finally(() => (settled = true));
    await new Promise<void>((r) => attempt.signal.addEventListener('abort', () => r(), { once: true }));
    // No timer may end the wait: the audit settles within the turns after the abort (the back-off is 500 ms).
    for (let turn = 0; turn < 5 && !settled; turn++) await new Promise((r) => setImmediate(r));
    expect(settled).toBe(true);
    expect(await audited).toMatchObject({ kind: 'audited', duplicates: ['first'] });
    expect(f.cancels).toEqual(['first']);
    expect(f.events.at(-1)).toMatchObject({
      type: 'resubmit_audit',
      detail: { final: true, cancelPending: ['first'] },
    });
  });
});

describe('an operator’s task and a late answer', () => {
  it('a task recorded meanwhile by a late answer is never silently put in place of the operator’s: refused, with both in the timeline', async () => {
    const events: { type: string; detail: Record<string, unknown> }[] = [];
    const kit = {
      store: {
        jobs: { get: async () => ({ ...row, state: 'pending', task_id: 'late', provider: 'apify' }) },
        findings: {
          appendEvent: async (_j: string, type: string, _s: unknown, detail: Record<string, unknown>) =>
            void events.push({ type, detail }),
        },
      },
    } as unknown as ActivityKit;
    expect(await adoptTask(kit, { jobId: input.jobId, taskId: 'late', by: 'op' })).toBe('late');
    expect(await adoptTask(kit, { jobId: input.jobId, taskId: 'mine', by: 'op' })).toEqual({
      refused: expect.stringContaining('a task (late) was recorded for this job meanwhile'),
    });
    expect(events.map((e) => [e.type, e.detail.taskId, e.detail.outcome, e.detail.by])).toEqual([
      ['operator_resolve', 'late', 'adopted', 'op'],
      ['operator_resolve', 'mine', 'refused', 'op'],
    ]);
    expect(events[1]!.detail.evidence).toEqual({ recorded: 'late' });
  });
});
