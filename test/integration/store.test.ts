/**
 * The result store against both dialects: SQLite (a real file) and PostgreSQL (a real server
 * started for the test). Migrations, registration with conflict detection, intent/answer
 * recording, task binding (one job per task; a collision never names another account's job),
 * transitions that never leave a final state, and write-once under concurrency.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANOTHER_ACCOUNTS_JOB, IdempotencyConflictStoreError, openStore, type Store } from '../../src/store/index.js';
import { keepStore } from '../helpers/evidence.js';
import { bothDialects } from '../helpers/postgres.js';
import { countResultDocuments } from '../helpers/storeQueries.js';

const { dir, urlOf } = bothDialects('scrape-store-test-');

const payload = (title: string) => ({
  url: 'https://e.x/',
  finalUrl: 'https://e.x/',
  httpStatus: 200,
  title,
  byline: null,
  excerpt: null,
  lang: 'en',
  siteName: null,
  publishedTime: null,
  text: 't',
  markdown: 'm',
  links: ['https://e.x/a'],
  contentLength: 10,
});

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`store on ${dialect}`, () => {
    let store: Store;
    beforeAll(async () => {
      store = await openStore(urlOf(dialect, 'store.db'));
      await store.migrate(); // a second migrate is a no-op
    });
    afterAll(async () => {
      if (store) await keepStore(store, `store-${dialect}`); // for the secrets scan
      await store?.close();
    });

    const job = (id: string, hash = 'h1') => ({
      id,
      account: 'acme',
      idem_key: id,
      provider: 'p',
      request_hash: hash,
      url: 'https://e.x/',
      input: '{}',
      options: '{}',
      batch_id: null,
      workflow_id: id,
      task_id: null,
      deadline_at: null,
    });

    it('registers a job once and refuses the same key with other parameters', async () => {
      const a = await store.jobs.register(job('j1'));
      const b = await store.jobs.register(job('j1'));
      expect(b.created_at).toBe(a.created_at);
      await expect(store.jobs.register(job('j1', 'other'))).rejects.toBeInstanceOf(IdempotencyConflictStoreError);
    });

    it('records intent then answer; a recorded task ID is never replaced', async () => {
      await store.jobs.register(job('j2'));
      const reserved = await store.slots.reserveSubmit('j2', { label: 'k' }, { initial: 4 }, false);
      expect(reserved).toMatchObject({ kind: 'reserved' });
      expect((await store.jobs.get('j2'))?.submit_intent_at).toBeTruthy();
      expect(await store.jobs.recordTaskId('j2', 't-2', 'queued', 'submit')).toBe('t-2');
      expect(await store.jobs.recordTaskId('j2', 't-OTHER', 'queued', 'reconcile')).toBe('t-2');
      const row = await store.jobs.get('j2');
      expect(row).toMatchObject({ task_id: 't-2', state: 'pending', submit_intent_at: null });
    });

    it('a task that arrives after the job ended is not bound: the row keeps its final state, the timeline keeps the task', async () => {
      await store.jobs.register(job('j-ended'));
      expect(await store.jobs.transition('j-ended', 'failed')).toBe(true);
      const out = await store.jobs.bindTask({
        jobId: 'j-ended',
        taskId: 't-late',
        providerStatus: 'queued',
        source: 'submit',
      });
      expect(out).toEqual({ kind: 'final', state: 'failed' });
      expect(await store.jobs.get('j-ended')).toMatchObject({ state: 'failed', task_id: null });
      const ev = (await store.findings.timeline('j-ended')).find((e) => e.type === 'task_after_final')!;
      expect(JSON.parse(ev.detail!)).toMatchObject({ taskId: 't-late', source: 'submit' });
      await expect(store.jobs.recordTaskId('j-ended', 't-late', 'queued', 'submit')).rejects.toThrow(/already failed/);
    });

    it('a task bound to another job is refused; the collision names a job of the same account, never another account’s job ID', async () => {
      const mine = { ...job('j-own'), account: 'acme' };
      const sibling = { ...job('j-sibling'), account: 'acme' };
      const theirs = { ...job('j-theirs'), account: 'globex', idem_key: 'j-theirs' };
      for (const j of [mine, sibling, theirs]) await store.jobs.register(j);
      const bind = (jobId: string, taskId: string) =>
        store.jobs.bindTask({ jobId, taskId, providerStatus: 'queued', source: 'reconcile', providerAccount: 'p@h' });
      expect(await bind('j-sibling', 't-sib')).toMatchObject({ kind: 'bound', taskId: 't-sib' });
      expect(await bind('j-theirs', 't-theirs')).toMatchObject({ kind: 'bound', taskId: 't-theirs' });
      expect(await bind('j-own', 't-sib')).toEqual({ kind: 'collision', boundTo: 'j-sibling' });
      expect(await bind('j-own', 't-theirs')).toEqual({ kind: 'collision', boundTo: ANOTHER_ACCOUNTS_JOB });
      const elsewhere = await store.jobs.tasksBoundElsewhere({
        providerAccount: 'p@h',
        provider: 'p',
        taskIds: ['t-sib', 't-theirs'],
        exceptJobId: 'j-own',
      });
      expect(Object.fromEntries(elsewhere)).toEqual({ 't-sib': 'j-sibling', 't-theirs': ANOTHER_ACCOUNTS_JOB });
      expect(JSON.stringify(await store.findings.timeline('j-own'))).not.toContain('j-theirs');
      expect((await store.jobs.get('j-own'))?.task_id).toBeNull();
    });

    it('a resubmit after reconcile passes an intent the reconcile decided, never one of its own earlier attempt', async () => {
      await store.jobs.register(job('j-resubmit'));
      const scope = { label: 'p@h#k' };
      const limits = { initial: 8 };
      expect((await store.slots.reserveSubmit('j-resubmit', scope, limits, false)).kind).toBe('reserved');
      const intentAt = Date.parse((await store.jobs.get('j-resubmit'))!.submit_intent_at!);
      // The reconcile proved that intent's task absent; the resubmit activity was scheduled after it.
      expect((await store.slots.reserveSubmit('j-resubmit', scope, limits, true, intentAt + 5_000)).kind).toBe(
        'reserved',
      );
      // That attempt's own intent, met by the activity's next attempt: it may have reached the provider.
      const mine = Date.parse((await store.jobs.get('j-resubmit'))!.submit_intent_at!);
      expect((await store.slots.reserveSubmit('j-resubmit', scope, limits, true, mine - 1_000)).kind).toBe('known');
      // Without a scheduling time (outside an activity), the flag alone decides, as before.
      expect((await store.slots.reserveSubmit('j-resubmit', scope, limits, true)).kind).toBe('reserved');
    });

    it('a job that ended while its submit waited for a slot (cancelled) reserves nothing: no submit may leave for it', async () => {
      await store.jobs.register(job('j-cancelled-waiting'));
      expect(await store.jobs.transition('j-cancelled-waiting', 'cancelling')).toBe(true);
      expect(await store.jobs.transition('j-cancelled-waiting', 'cancelled')).toBe(true);
      expect(await store.slots.reserveSubmit('j-cancelled-waiting', { label: 'p@h#k' }, { initial: 8 }, false)).toEqual(
        {
          kind: 'final',
          state: 'cancelled',
        },
      );
      expect((await store.jobs.get('j-cancelled-waiting'))!.submit_intent_at).toBeNull();
    });

    it('a second task for one job is kept as evidence (task_after_bound), never bound; a task of another job is a collision even on an ended job, never taken for its own late task', async () => {
      await store.jobs.register(job('j-two-tasks'));
      const bind = (jobId: string, taskId: string) =>
        store.jobs.bindTask({ jobId, taskId, providerStatus: 'queued', source: 'submit', providerAccount: 'p@h' });
      expect(await bind('j-two-tasks', 't-resubmit')).toMatchObject({ kind: 'bound', taskId: 't-resubmit' });
      expect(await bind('j-two-tasks', 't-first')).toMatchObject({
        kind: 'bound',
        taskId: 't-resubmit',
        recorded: false,
      });
      expect(await bind('j-two-tasks', 't-resubmit')).toMatchObject({ kind: 'bound', taskId: 't-resubmit' });
      const events = (await store.findings.timeline('j-two-tasks')).filter((e) => e.type === 'task_after_bound');
      expect(events.map((e) => JSON.parse(e.detail!))).toEqual([
        expect.objectContaining({ taskId: 't-first', bound: 't-resubmit' }),
      ]);
      // A job that holds a task, answered with another job’s task: a collision, never a second task of its own.
      await store.jobs.register(job('j-holder'));
      expect(await bind('j-holder', 't-holder')).toMatchObject({ kind: 'bound', taskId: 't-holder' });
      expect(await bind('j-two-tasks', 't-holder')).toEqual({ kind: 'collision', boundTo: 'j-holder' });
      await store.jobs.register(job('j-ended-late'));
      expect(await store.jobs.transition('j-ended-late', 'cancelling')).toBe(true);
      expect(await store.jobs.transition('j-ended-late', 'cancelled')).toBe(true);
      expect(await bind('j-ended-late', 't-resubmit')).toEqual({ kind: 'collision', boundTo: 'j-two-tasks' });
      expect(await bind('j-ended-late', 't-own-late')).toEqual({ kind: 'final', state: 'cancelled' });
    });

    it('never moves a final job unless forced', async () => {
      await store.jobs.register(job('j3'));
      expect(
        await store.jobs.transition('j3', 'failed', {
          error: { kind: 'permanent', message: 'bad', at: new Date().toISOString() },
        }),
      ).toBe(true);
      expect(await store.jobs.transition('j3', 'pending')).toBe(false);
      expect((await store.jobs.get('j3'))?.state).toBe('failed');
    });

    it('refuses at the store every move the transition table forbids, whoever asks: the row and the timeline stay as they were', async () => {
      await store.jobs.register(job('j-illegal'));
      const events = async () => (await store.findings.timeline('j-illegal')).length;
      const before = await events();
      // submitting → completed skips pending; submitting → cancelled skips cancelling; → expired is the provider's or the retention's.
      for (const to of ['completed', 'cancelled', 'expired', 'tracking_interrupted'] as const)
        expect(await store.jobs.transition('j-illegal', to), to).toBe(false);
      expect((await store.jobs.get('j-illegal'))?.state).toBe('submitting');
      expect(await events()).toBe(before);
      // A result for a job that never reached pending is not written either: result and move commit together.
      const out = await store.results.writeOnce('j-illegal', 'p', 't-illegal', payload('x'), 60_000);
      expect(out).toMatchObject({ refused: 'submitting' });
      expect(await store.results.count({ jobId: 'j-illegal' })).toBe(0);
      // The moves the table allows go through, and a final job stays final.
      expect(await store.jobs.transition('j-illegal', 'unknown')).toBe(true);
      expect(await store.jobs.transition('j-illegal', 'failed')).toBe(true);
      expect(await store.jobs.transition('j-illegal', 'pending')).toBe(false);
      expect(await store.jobs.resume('j-illegal', {})).toBe('failed');
    });

    it('writes a result once under 10 concurrent writers, atomically with completion', async () => {
      await store.jobs.register(job('j4'));
      await store.jobs.recordTaskId('j4', 't-4', 'queued', 'submit');
      const outs = await Promise.all(
        Array.from({ length: 10 }, (_, i) => store.results.writeOnce('j4', 'p', 't-4', payload(`w${i}`), 60_000)),
      );
      expect(outs.filter((o) => o.inserted)).toHaveLength(1);
      expect(outs.filter((o) => o.transitioned)).toHaveLength(1);
      expect(new Set(outs.map((o) => o.resultId)).size).toBe(1);
      expect(await store.results.count({ provider: 'p', taskId: 't-4' })).toBe(1);
      expect((await store.jobs.get('j4'))?.state).toBe('completed');
      expect((await store.findings.timeline('j4')).filter((e) => e.state === 'completed')).toHaveLength(1);
    });

    it('writes a multi-document result and all its documents once, in one transaction; reads them paged; purge keeps evidence', async () => {
      await store.jobs.register(job('j5'));
      await store.jobs.recordTaskId('j5', 't-5', 'running', 'submit');
      const documents = Array.from({ length: 1_203 }, (_, i) => ({
        url: `https://e.x/p/${i}`,
        finalUrl: `https://e.x/p/${i}/`,
        httpStatus: i === 7 ? 404 : 200,
        title: `page ${i}`,
        markdown: `# page ${i}`,
        text: `page ${i}`,
        links: [`https://e.x/p/${i + 1}`],
        data: { depth: i % 3, metadata: { lang: 'en' } },
        ...(i === 9 ? { error: { code: 'TIMEOUT', message: 'the page timed out' } } : {}),
      }));
      // Two writers with different payloads race; one wins, the other inserts nothing at all.
      const [a, b] = await Promise.all([
        store.results.writeOnce('j5', 'p', 't-5', { ...payload('crawl'), documents }, 60_000),
        store.results.writeOnce('j5', 'p', 't-5', { ...payload('other'), documents: documents.slice(0, 3) }, 60_000),
      ]);
      expect([a, b].filter((o) => o.inserted)).toHaveLength(1);
      const winner = a.inserted ? a : b;
      const expected = a.inserted ? documents.length : 3;
      expect(await store.results.count({ provider: 'p', taskId: 't-5' })).toBe(1);
      expect(await countResultDocuments(store, { jobId: 'j5' })).toBe(expected);
      const again = await store.results.writeOnce('j5', 'p', 't-5', { ...payload('late'), documents }, 60_000);
      expect(again).toMatchObject({ resultId: winner.resultId, inserted: false, transitioned: false });
      expect(await countResultDocuments(store, { resultId: winner.resultId })).toBe(expected);

      const page = await store.results.documents('j5', { offset: 2, limit: 2 });
      expect(page.total).toBe(expected);
      expect(page.documents.map((d) => d.seq)).toEqual(expected > 3 ? [2, 3] : [2]);
      expect(page.documents[0]).toMatchObject({
        url: 'https://e.x/p/2',
        title: 'page 2',
        markdown: '# page 2',
        links: ['https://e.x/p/3'],
        data: { depth: 2, metadata: { lang: 'en' } },
      });
      if (a.inserted) {
        const tail = await store.results.documents('j5', { offset: 1_200, limit: 100 });
        expect(tail.documents.map((d) => d.seq)).toEqual([1_200, 1_201, 1_202]);
        const [failed] = (await store.results.documents('j5', { offset: 9, limit: 1 })).documents;
        expect(failed).toMatchObject({ seq: 9, error: { code: 'TIMEOUT', message: 'the page timed out' } });
      }

      // Retention: payloads go, the evidence (URL, status, title, error) stays.
      await store.db
        .updateTable('results')
        .set({ expires_at: new Date(Date.now() - 1_000).toISOString() })
        .where('id', '=', winner.resultId)
        .execute();
      const purged = await store.results.purgeExpired(new Date());
      expect(purged.purged).toBeGreaterThanOrEqual(1);
      const after = await store.results.documents('j5', { offset: 0, limit: 3 });
      expect(after.result?.purged_at).toBeTruthy();
      expect(after.documents[1]).toEqual({
        seq: 1,
        identity: expect.stringMatching(/^sha256:https:\/\/e\.x\/p\/1#[0-9a-f]{64}$/),
        url: 'https://e.x/p/1',
        finalUrl: 'https://e.x/p/1/',
        httpStatus: 200,
        title: 'page 1',
        markdown: null,
        text: null,
        links: undefined,
        data: undefined,
        error: undefined,
        body: null,
      });
      expect((await store.jobs.get('j5'))?.state).toBe('expired');
    });

    it('a task bound with a claim comes back with its row: pending, the polling generation and deadline claimed; a newer generation is never moved back', async () => {
      await store.jobs.register({ ...job('j-claim'), deadline_at: null });
      await store.slots.reserveSubmit('j-claim', { label: 'p@h#claim' }, { initial: 4 }, false, undefined, {
        provider: { account: 'p@h', key: 'p@h#claim' },
      });
      const deadlineAt = new Date(Date.now() + 60_000).toISOString();
      const count = () =>
        store.sqliteStatements ? store.sqliteStatements.prepared + store.sqliteStatements.reused : 0;
      const before = count();
      const out = await store.jobs.bindTask({
        jobId: 'j-claim',
        taskId: 't-claim',
        providerStatus: 'queued',
        source: 'submit',
        providerAccount: 'p@h',
        claim: { generation: 5, deadlineAt },
      });
      // On SQLite: begin, the bind, its timeline event, commit.
      if (dialect === 'sqlite') expect(count() - before).toBe(4);
      expect(out).toMatchObject({ kind: 'bound', taskId: 't-claim', recorded: true });
      const row = out.kind === 'bound' ? out.row : undefined;
      expect(row).toMatchObject({
        state: 'pending',
        task_id: 't-claim',
        deadline_at: deadlineAt,
        submit_intent_at: null,
      });
      expect(Number(row?.poll_generation)).toBe(5);
      expect(await store.jobs.get('j-claim')).toEqual(row);
      const events = await store.findings.timeline('j-claim');
      expect(events.filter((e) => e.type === 'task_recorded')).toHaveLength(1);
      // A check of that generation goes on from the bound row; one of an older generation is stale.
      await store.providerKeys.setCooldown('p@h#claim', Date.now() + 30_000, 'RATE_LIMITED');
      const go = await store.polling.beginCheck('j-claim', 5, false, deadlineAt);
      expect(go).toMatchObject({ kind: 'go', row: { task_id: 't-claim' } });
      expect(go.kind === 'go' && go.seen?.get('p@h#claim')).toMatchObject({ reason: 'RATE_LIMITED' });
      expect(await store.polling.beginCheck('j-claim', 4, false, deadlineAt)).toMatchObject({ kind: 'stale' });
      expect(await store.polling.recordCheck('j-claim', { providerStatus: 'running', state: 'running' }, 0)).toBe(1);
      expect(await store.polling.recordCheck('j-claim', { providerStatus: 'running', state: 'running' }, 0)).toBe(2);
    });

    it('a single-page result has no documents', async () => {
      await store.jobs.register(job('j6'));
      await store.jobs.recordTaskId('j6', 't-6', 'queued', 'submit');
      await store.results.writeOnce('j6', 'p', 't-6', payload('one'), null);
      expect(await store.results.documents('j6', { offset: 0, limit: 10 })).toMatchObject({ total: 0, documents: [] });
      expect(await store.results.documents('missing', { offset: 0, limit: 10 })).toEqual({
        result: undefined,
        total: 0,
        documents: [],
      });
    });
  });
}

describe('store metrics', () => {
  it('reports each committed transition and cool-down to the metrics the store was opened with', async () => {
    const seen: string[] = [];
    const store = await openStore(`sqlite:${path.join(dir, 'metrics.db')}`, {
      metrics: { transition: (state) => seen.push(state), cooldown: (label) => seen.push(`cooldown ${label}`) },
    });
    try {
      const row = {
        id: 'm1',
        account: 'acme',
        idem_key: 'm1',
        provider: 'p',
        request_hash: 'h1',
        url: 'https://e.x/',
        input: '{}',
        options: '{}',
        batch_id: null,
        workflow_id: 'm1',
        task_id: null,
        deadline_at: null,
      };
      await store.jobs.register(row);
      await store.jobs.bindTask({ jobId: 'm1', taskId: 't1', providerStatus: 'queued', source: 'submit' });
      await store.jobs.bindTask({ jobId: 'm1', taskId: 't1', providerStatus: 'queued', source: 'submit' }); // a repeat moves nothing
      expect(await store.jobs.transition('m1', 'failed')).toBe(true);
      expect(await store.jobs.transition('m1', 'completed')).toBe(false); // final: refused, not reported
      await store.providerKeys.setCooldown('p/acme', Date.now() + 60_000, 'rate limited');
      expect(seen).toEqual(['pending', 'failed', 'cooldown p/acme']);
    } finally {
      await store.close();
    }
  });
});
