/**
 * The matrix's invariant checks (`checkRound` in `./matrix.ts`) can fail: each broken invariant is
 * built from rows in a real SQLite store and a provider record the test writes itself, and the
 * check must name it; the same rows without the fault must pass. Without this a matrix round that
 * passes would prove nothing. No Temporal, no fixture server: the check reads only the store and
 * the fixture's `providerJobs()`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerKeys } from '../../src/providers/shared/keys.js';
import { openStore, Store } from '../../src/store/index.js';
import type { ConformanceControls, ProviderJobRecord } from '../fixtures/providers/conformance.js';
import type { Scenario } from '../fixtures/providers/harness.js';
import { checkRound, type CaseOutcome, type ConformanceFixture } from './matrix.js';

let dir: string;
let store: Store;
let records: ProviderJobRecord[] = [];
let n = 0;

/** A fixture whose provider record is `records`; no other control is used by the check. */
const controls = { providerJobs: () => records } as unknown as ConformanceControls;
const scenario = () => ({ store, fixture: { conformance: controls } }) as unknown as Scenario<ConformanceFixture>;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conformance-invariants-'));
  store = await openStore(`sqlite:${path.join(dir, 'store.db')}`);
});
afterAll(async () => {
  await store?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A provider job of the case `token` (the URL carries the token, as in the matrix). */
function rec(token: string, over: Partial<ProviderJobRecord> = {}): ProviderJobRecord {
  return {
    id: `task-${token}-${++n}`,
    owner: 'acme',
    url: `http://127.0.0.1:9/pages/001/?cf=${token}`,
    state: 'completed',
    rawStatus: 'done',
    billed: true,
    createdAt: Date.now(),
    ...over,
  };
}

/** A stored job of the case `token` in `state`, bound to `taskId`; returns its outcome as the matrix would record it. */
async function job(
  token: string,
  state: string,
  taskId: string | null,
  over: Partial<CaseOutcome> = {},
): Promise<CaseOutcome> {
  const jobId = `scrape:acme:${token}`;
  const url = `http://127.0.0.1:9/pages/001/?cf=${token}`;
  await store.jobs.insert(
    Store.jobRow({
      jobId,
      account: 'acme',
      key: token,
      provider: 'fx',
      requestHash: token,
      request: { url, format: 'markdown', options: {} },
      workflowId: jobId,
    }),
  );
  await store.db
    .updateTable('jobs')
    .set({ state, task_id: taskId, provider_account: 'fx@127.0.0.1#acct' })
    .where('id', '=', jobId)
    .execute();
  return {
    case: { id: token, lookalike: false, binary: false, cancel: 'none' },
    url,
    jobId,
    key: token,
    lookalikes: [],
    waits: [],
    operator: [],
    cancels: [],
    row: (await store.jobs.get(jobId))!,
    ...over,
  };
}

/** A result row of `jobId` with `docs` documents (each a title), and `fields` on the result row. */
async function result(
  jobId: string,
  taskId: string,
  fields: Record<string, unknown>,
  docs: string[] = [],
): Promise<void> {
  const id = `res-${jobId}`;
  await store.db
    .insertInto('results')
    .values({
      id,
      provider: 'fx',
      task_id: taskId,
      job_id: jobId,
      url: 'http://127.0.0.1:9/',
      written_at: new Date().toISOString(),
      document_count: docs.length,
      ...fields,
    } as never)
    .execute();
  for (const [seq, title] of docs.entries())
    await store.db
      .insertInto('result_documents')
      .values({ result_id: id, seq, identity: `doc-${seq}`, url: 'http://127.0.0.1:9/a', title } as never)
      .execute();
}

const invariants = (v: { invariant: string }[]) => v.map((x) => x.invariant);

describe('conformance matrix: the invariant checks catch each broken invariant', () => {
  it('a completed job bound to its own provider job, with content, breaks nothing', async () => {
    const r = rec('ok1', { clientRef: providerKeys('acme', 'ok1').clientRef });
    records = [r];
    const o = await job('ok1', 'completed', r.id);
    await result(o.jobId, r.id, { title: 'A page' });
    expect(await checkRound(scenario(), [o])).toEqual([]);
  });

  it('two provider jobs for one request break “at most one provider job”, unless an operator resubmitted', async () => {
    const [a, b] = [rec('dup1'), rec('dup1')];
    records = [a!, b!];
    const o = await job('dup1', 'completed', a!.id);
    await result(o.jobId, a!.id, { title: 'A page' });
    expect(invariants(await checkRound(scenario(), [o]))).toEqual(['at most one provider job per logical request']);
    expect(
      await checkRound(scenario(), [{ ...o, operator: [{ at: '', resolved: 'resubmit', evidence: true }] }]),
    ).toEqual([]);
  });

  it('a completed job bound to a look-alike of another client breaks “no task of another job”', async () => {
    const mine = rec('look1', { state: 'running' });
    const other = rec('look1');
    records = [mine, other];
    const o = await job('look1', 'completed', other.id, { lookalikes: [other.id] });
    await result(o.jobId, other.id, { title: 'A page' });
    expect(invariants(await checkRound(scenario(), [o]))).toContain('no task of another job');
  });

  it('failed without a task while the provider runs the job, and cancelled while the provider completed it, contradict the provider', async () => {
    const running = rec('fail1', { state: 'running' });
    const done = rec('canc1');
    records = [running, done];
    const failed = await job('fail1', 'failed', null);
    const cancelled = await job('canc1', 'cancelled', done.id);
    const v = await checkRound(scenario(), [failed, cancelled]);
    expect(v.map((x) => `${x.caseId}: ${x.invariant}`)).toEqual([
      'fail1: no final state contradicts the provider',
      'canc1: no final state contradicts the provider',
    ]);
  });

  it('the same document stored twice, one document missing, and an empty result without a note are each named', async () => {
    const twice = rec('docs1', { documents: 2 });
    const short = rec('docs2', { documents: 3 });
    const empty = rec('empty1');
    records = [twice, short, empty];
    const a = await job('docs1', 'completed', twice.id);
    await result(a.jobId, twice.id, {}, ['Page 1', 'Page 1']);
    const b = await job('docs2', 'completed', short.id);
    await result(b.jobId, short.id, {}, ['Page 1', 'Page 2']);
    const c = await job('empty1', 'completed', empty.id);
    await result(c.jobId, empty.id, {});
    const v = await checkRound(scenario(), [a, b, c]);
    expect(v.map((x) => `${x.caseId}: ${x.invariant}`)).toEqual([
      'docs1: documents unique per identity',
      'docs1: documents as the provider produced them',
      'docs2: documents as the provider produced them',
      'empty1: nothing stored empty without saying so',
    ]);
  });

  it('an empty result that says why (content_note) breaks nothing', async () => {
    const r = rec('note1');
    records = [r];
    const o = await job('note1', 'completed', r.id);
    await result(o.jobId, r.id, { content_note: 'the target answered an empty body' });
    expect(await checkRound(scenario(), [o])).toEqual([]);
  });

  it('a job found waiting for an operator without evidence, and a resolve refused, are reported', async () => {
    const r = rec('op1');
    const q = rec('op2');
    records = [r, q];
    const a = await job('op1', 'completed', r.id, { waits: [{ evidence: false }] });
    await result(a.jobId, r.id, { title: 'A page' });
    const b = await job('op2', 'completed', q.id, {
      waits: [{ evidence: true }],
      operator: [{ at: '', resolved: 'task', taskId: q.id, evidence: true, refused: 'task bound elsewhere' }],
    });
    await result(b.jobId, q.id, { title: 'A page' });
    const v = await checkRound(scenario(), [a, b]);
    expect(v.map((x) => `${x.caseId}: ${x.invariant}`)).toEqual([
      'op1: an undecided job waits in unknown with evidence',
      'op2: the operator’s resolve completes an undecided job',
    ]);
  });

  it('a job the operator resolved that then ends other than completed is reported', async () => {
    const r = rec('op3');
    records = [r];
    const o = await job('op3', 'failed', null, {
      waits: [{ evidence: true }],
      operator: [{ at: '', resolved: 'resubmit', evidence: true }],
    });
    expect(invariants(await checkRound(scenario(), [o]))).toEqual([
      'the operator’s resolve completes an undecided job',
      'no final state contradicts the provider',
    ]);
  });
});
