/**
 * Scenarios of the reference contract on the provider harness (`test/fixtures/providers/harness.ts`),
 * run twice: with the `reference` kind (the hand-written adapter) and with the declarative `http`
 * kind configured for the same contract (`test/fixtures/providers/http/referenceContract.ts`), the
 * proof that a configuration reproduces it. Each drives jobs through the real workflow on the
 * shared Temporal dev server against the reference provider (`tools/sim`, the seeds' contract) and asserts provider jobs created, states,
 * result rows and documents, errors, and that no secret leaked. Acceptance through a base URL
 * with a path prefix, every status word (and words the adapter does not know, and `202`
 * building), cancel, 429 + Retry-After, per-provider poll defaults, a lost submit reconciled by
 * idempotency, by list and not at all, signed webhooks and unsigned ones on the per-job token route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PollPolicy } from '../../../src/model/types.js';
import type { SimResponseEvent } from '../../../tools/sim/index.js';
import { startPageServer, type PageServer } from '../../helpers/pages.js';
import { simWebhookSignature } from '../../../tools/sim/webhooks.js';
import {
  FIXTURE_KEYS,
  SCENARIO_POLICY,
  startProviderScenario,
  waitFor,
  type Scenario,
} from '../../fixtures/providers/harness.js';
import { referenceAsHttp } from '../../fixtures/providers/http/referenceContract.js';
import {
  startReferenceFixture,
  type ReferenceFixture,
  type ReferenceFixtureOptions,
} from '../../fixtures/providers/reference/server.js';
import { listQuarantine } from '../../helpers/storeQueries.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => pages?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every API response of the sim (time, endpoint, job, status). */
function responses(s: Scenario<ReferenceFixture>): SimResponseEvent[] {
  const seen: SimResponseEvent[] = [];
  s.fixture.sim.events.on('response', (e) => seen.push(e));
  return seen;
}

/** The entries that must show the reference contract: the hand-written adapter, and the contract declared as an `http` entry. */
const KINDS = [{ kind: 'reference' }, { kind: 'http' }] as const;

describe.each(KINDS)('$kind kind, reference contract', ({ kind }) => {
  /** A scenario on the reference provider with the entry of `kind`; `capabilities` follow the sim profile. */
  function reference(
    fixture: ReferenceFixtureOptions,
    opts: { entry?: Record<string, unknown>; webhooks?: boolean } = {},
  ) {
    const parts = {
      idempotency: fixture.profile?.idempotency ?? true,
      list: fixture.profile?.list ?? true,
      cancel: fixture.profile?.cancel ?? true,
      webhooks: opts.webhooks ?? false,
    };
    const { webhookSignature, ...common } = opts.entry ?? {};
    return startProviderScenario<ReferenceFixture>({
      kind,
      fixture: () => startReferenceFixture(fixture),
      entry: (fx) => ({
        baseUrl: fx.url,
        readTimeoutMs: 3_000,
        submitTimeoutMs: 3_000,
        ...(kind === 'reference'
          ? { capabilities: parts, ...(webhookSignature === undefined ? {} : { webhookSignature }) }
          : referenceAsHttp({ ...parts, webhookSignature: (webhookSignature as boolean | undefined) ?? true })),
        ...common,
      }),
      webhooks: opts.webhooks,
    });
  }

  describe('reference provider through a prefixed base URL', () => {
    let s: Scenario<ReferenceFixture>;
    beforeAll(async () => {
      s = await reference(
        { profile: { concurrency: 8, minRunMs: 300 }, prefix: '/gw/v1' },
        { entry: { poll: { initialDelayMs: 2_500 } } },
      );
    });
    afterAll(async () => s?.stop());

    it('acceptance: 202 + job_id is recorded, the job completes with one result row and no documents, every call kept the /gw/v1 prefix, no secret leaked', async () => {
      const url = pages.pageUrl('wikipedia');
      const ref = await s.start({ url, key: 'accept-1' });
      const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
      expect(row.state).toBe('completed');
      const provider = s.fixture.sim.jobsFor('acme').filter((j) => j.url === url);
      expect(provider).toHaveLength(1);
      expect(row.task_id).toBe(provider[0]!.job_id);
      const out = await s.outcome(ref.jobId);
      expect(out).toMatchObject({
        state: 'completed',
        providerStatus: 'completed',
        results: 1,
        documents: { total: 0, rows: 0 },
      });
      expect((await s.client.getResult('acme', ref.jobId)).finalUrl).toBe(url);
      expect(await s.client.getResultDocuments('acme', ref.jobId)).toMatchObject({
        total: 0,
        documents: [],
        nextOffset: null,
      });
      const paths = s.fixture.gateway!.requests.map((r) => `${r.method} ${r.path}`);
      expect(paths).toContain('POST /gw/v1/api/scrape');
      expect(paths).toContain(`GET /gw/v1/api/jobs/${row.task_id}`);
      expect(paths.every((p) => p.includes(' /gw/v1/api/'))).toBe(true);
      expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
    });

    it('the gateway passes a provider reset through: a status read cut without an answer is retried and the job completes; a submit cut after commit is reconciled; one provider job each', async () => {
      const { sim } = s.fixture;
      sim.faults.add({
        account: 'acme',
        endpoint: 'status',
        urlContains: 'gw-reset',
        action: 'drop_after_commit',
        times: 1,
      });
      sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'gw-lost',
        action: 'drop_after_commit',
        times: 1,
      });
      const reset = await s.start({ url: `${pages.pageUrl('001')}?gw-reset`, key: 'gw-reset' });
      const lost = await s.start({ url: `${pages.pageUrl('001')}?gw-lost`, key: 'gw-lost' });
      for (const ref of [reset, lost])
        expect((await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000)).state).toBe(
          'completed',
        );
      for (const part of ['gw-reset', 'gw-lost'])
        expect(sim.jobsFor('acme').filter((j) => j.url.includes(part))).toHaveLength(1);
      expect((await s.outcome(lost.jobId)).events).toContain('submit_ambiguous');
      const resetJob = sim.jobsFor('acme').find((j) => j.url.includes('gw-reset'))!;
      expect(resetJob.status_request_times.length).toBeGreaterThanOrEqual(2); // the cut read, then another
    });

    it('the provider entry’s poll defaults apply to a job that does not override them (first check ≥ 2.5 s after submit)', async () => {
      const { initialDelayMs: _i, maxDelayMs: _m, ...rest } = SCENARIO_POLICY;
      const url = `${pages.pageUrl('001')}?poll-defaults`;
      const ref = await s.start({ url, key: 'poll-defaults', policy: rest });
      await s.waitFor(ref.jobId, ['completed']);
      const job = s.fixture.sim.jobsFor('acme').find((j) => j.url === url)!;
      expect(job.status_request_times[0]! - Date.parse(job.created_at)).toBeGreaterThanOrEqual(2_500 * 0.9 - 50);
    });

    it('(needs workflow v2 and ReferenceAdapter.status returning `result`) a job finished by its first check costs one read: the final status answer carries the page', async () => {
      const url = `${pages.pageUrl('002')}?inline`;
      const ref = await s.start({
        url,
        key: 'inline-1',
        policy: { ...SCENARIO_POLICY, initialDelayMs: 1_500, maxDelayMs: 2_000 },
      });
      const row = await s.waitFor(ref.jobId, ['completed', 'failed']);
      expect(row.state).toBe('completed');
      expect((await s.outcome(ref.jobId)).results).toBe(1);
      expect(s.fixture.statusReads(row.task_id!)).toHaveLength(1);
    });

    it('every status word: queued and running keep polling, completed writes the result, failed keeps the provider code, cancelled at the provider ends cancelled', async () => {
      const sim = s.fixture.sim;
      sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'word=queued',
        action: 'hold',
        holdIn: 'queued',
      });
      sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'word=running',
        action: 'hold',
        holdIn: 'running',
      });
      sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'word=failed',
        action: 'fail_job',
        code: 'TARGET_BLOCKED',
        message: 'target refused the crawler',
      });
      sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: 'word=cancelled', action: 'never_finish' });
      const start = (word: string) => s.start({ url: `${pages.pageUrl('002')}?word=${word}`, key: `word-${word}` });
      const [queued, running, failed, cancelled] = await Promise.all(
        ['queued', 'running', 'failed', 'cancelled'].map(start),
      );

      for (const [ref, word] of [
        [queued!, 'queued'],
        [running!, 'running'],
      ] as const) {
        const row = await waitFor(
          async () => {
            const r = await s.store.jobs.get(ref.jobId);
            return r?.provider_status === word && r.status_checks >= 2 ? r : undefined;
          },
          30_000,
          `${word} observed twice`,
        );
        expect(row.state).toBe('pending');
        sim.release(row.task_id!);
        expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
      }

      const f = await s.waitFor(failed!.jobId, ['failed', 'completed']);
      expect(f.state).toBe('failed');
      const fo = await s.outcome(failed!.jobId);
      expect(fo.lastError).toMatchObject({ kind: 'provider_failed', code: 'TARGET_BLOCKED' });
      expect(fo.incidents).toHaveLength(1);
      expect(fo.results).toBe(0);

      const c = await waitFor(async () => {
        const r = await s.store.jobs.get(cancelled!.jobId);
        return r?.task_id && r.status_checks >= 1 ? r : undefined;
      });
      // Someone cancels the task at the provider (not through us).
      const r = await fetch(`${sim.url}/api/jobs/${c.task_id}/cancel`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${FIXTURE_KEYS.acme}` },
      });
      expect(r.status).toBe(200);
      expect((await s.waitFor(cancelled!.jobId, ['cancelled', 'failed', 'completed'])).state).toBe('cancelled');
      expect(sim.jobsFor('acme').filter((j) => j.url.includes('word='))).toHaveLength(4);
    });

    it('a 202 "building", an unknown word and another case are "not ready": polled on the schedule, recorded, never ending the job', async () => {
      const sim = s.fixture.sim;
      sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'odd-words',
        action: 'hold',
        holdIn: 'running',
      });
      const ref = await s.start({ url: `${pages.pageUrl('003-metadata-preferred')}?odd-words`, key: 'odd-words' });
      const first = await waitFor(async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.task_id && r.status_checks >= 1 ? r : undefined;
      });
      const taskId = first.task_id!;
      const before = s.fixture.statusReads(taskId).length;
      s.fixture.rewriteStatus(
        taskId,
        { status: 202, body: { status: 'building' } },
        { word: 'stalled' },
        { word: 'stalled' },
        { word: 'Completed' },
      );
      await waitFor(
        async () => (await s.store.jobs.get(ref.jobId))?.provider_status === 'Completed',
        30_000,
        'the word "Completed" recorded',
      );
      const view = await s.client.getLiveView('acme', ref.jobId);
      expect(view.state).toBe('pending');
      expect(view.providerStatus).toBe('Completed');
      expect(view.providerState).toBe('unrecognised');
      const reads = s.fixture.statusReads(taskId).slice(before, before + 4);
      expect(reads).toHaveLength(4);
      // One request per scheduled check (≥ 200 ms × (1 − 10 % jitter) apart), never an immediate retry.
      for (let i = 1; i < reads.length; i++) expect(reads[i]! - reads[i - 1]!).toBeGreaterThanOrEqual(170);
      expect((await s.store.jobs.get(ref.jobId))!.state).toBe('pending');
      sim.release(taskId);
      const done = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted']);
      expect(done.state).toBe('completed');
      expect(sim.jobsFor('acme').filter((j) => j.url.includes('odd-words'))).toHaveLength(1);
    });

    it('cancel: the provider cancel endpoint is called once, the job ends cancelled, no result', async () => {
      const sim = s.fixture.sim;
      sim.faults.add({ account: 'acme', endpoint: 'submit', urlContains: 'cancel-me', action: 'never_finish' });
      const ref = await s.start({ url: `${pages.pageUrl('ars-1')}?cancel-me`, key: 'cancel-1' });
      const pending = await waitFor(async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.state === 'pending' && r.status_checks > 0 ? r : undefined;
      });
      const cancelsBefore = sim.stats().cancelCalls;
      const res = await s.cancel(ref.jobId);
      expect(res).toMatchObject({ kind: 'observed', state: 'cancelled' });
      expect(sim.stats().cancelCalls - cancelsBefore).toBe(1);
      expect(sim.getJob(pending.task_id!)?.status).toBe('cancelled');
      expect((await s.outcome(ref.jobId)).results).toBe(0);
    });

    it('429 with Retry-After: 3 on a status check: the next request for the task comes no sooner than 3 s later, and the job completes', async () => {
      const seen = responses(s);
      const sim = s.fixture.sim;
      sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'limited',
        action: 'hold',
        holdIn: 'running',
      });
      const ref = await s.start({ url: `${pages.pageUrl('heise')}?limited`, key: 'limited-1' });
      const row = await waitFor(async () => {
        const r = await s.store.jobs.get(ref.jobId);
        return r?.task_id && r.status_checks >= 1 ? r : undefined;
      });
      sim.faults.add({
        account: 'acme',
        endpoint: 'status',
        urlContains: 'limited',
        action: 'rate_limit',
        retryAfterSeconds: 3,
        times: 1,
      });
      sim.release(row.task_id!);
      await s.waitFor(ref.jobId, ['completed', 'failed'], 60_000);
      const mine = seen.filter((e) => e.jobId === row.task_id);
      const limitedAt = mine.findIndex((e) => e.status === 429);
      expect(limitedAt).toBeGreaterThanOrEqual(0);
      expect(mine[limitedAt + 1]!.at - mine[limitedAt]!.at).toBeGreaterThanOrEqual(3_000 - 50);
      expect((await s.outcome(ref.jobId)).state).toBe('completed');
    });
  });

  describe.each([
    {
      via: 'idempotent replay',
      profile: { concurrency: 8, idempotency: true, list: false },
      source: /idempotent replay/,
    },
    {
      via: 'the list by client reference',
      profile: { concurrency: 8, idempotency: false, list: true },
      source: /client reference/,
    },
  ])('reference provider: a lost submit reconciled by $via', ({ profile, source }) => {
    let s: Scenario<ReferenceFixture>;
    beforeAll(async () => {
      s = await reference({ profile });
    });
    afterAll(async () => s?.stop());

    it('the 202 is dropped after commit: exactly one provider job, adopted, completed once', async () => {
      s.fixture.sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'lost',
        action: 'drop_after_commit',
        times: 1,
      });
      const ref = await s.start({ url: `${pages.pageUrl('cnet')}?lost`, key: 'lost-1' });
      const row = await s.waitFor(ref.jobId, ['completed', 'failed', 'tracking_interrupted'], 60_000);
      expect(row.state).toBe('completed');
      const jobs = s.fixture.sim.jobsFor('acme').filter((j) => j.url.includes('lost'));
      expect(jobs).toHaveLength(1);
      expect(row.task_id).toBe(jobs[0]!.job_id);
      const out = await s.outcome(ref.jobId);
      expect(out.results).toBe(1);
      expect(out.events).toContain('submit_ambiguous');
      const recorded = (await s.store.findings.timeline(ref.jobId)).find((e) => e.type === 'task_recorded')!;
      expect(JSON.parse(recorded.detail!).source).toMatch(source);
    });
  });

  describe('reference provider: a lost submit with neither idempotency nor list', () => {
    let s: Scenario<ReferenceFixture>;
    beforeAll(async () => {
      s = await reference({ profile: { concurrency: 8, idempotency: false, list: false } });
    });
    afterAll(async () => s?.stop());

    it('waits in unknown with zero duplicates until an operator hands over the task ID', async () => {
      s.fixture.sim.faults.add({
        account: 'acme',
        endpoint: 'submit',
        urlContains: 'orphan',
        action: 'drop_after_commit',
        times: 1,
      });
      const ref = await s.start({ url: `${pages.pageUrl('cnn')}?orphan`, key: 'orphan-1' });
      await s.waitFor(ref.jobId, ['unknown']);
      await sleep(1_500);
      expect((await s.store.jobs.get(ref.jobId))!.state).toBe('unknown');
      const created = s.fixture.sim.jobsFor('acme').filter((j) => j.url.includes('orphan'));
      expect(created).toHaveLength(1);
      expect(s.fixture.sim.stats().requests.byEndpoint.submit).toBe(1);
      await s.waitForOperator(ref.jobId);
      await s.client.resolve('acme', ref.jobId, { taskId: created[0]!.job_id, by: 'scenario' });
      expect((await s.waitFor(ref.jobId, ['completed', 'failed'])).state).toBe('completed');
      expect(s.fixture.sim.jobsFor('acme').filter((j) => j.url.includes('orphan'))).toHaveLength(1);
    });
  });

  /** First status check 30 s × webhookSlowdown 5 = 150 s after submit: only a webhook can finish the job sooner. */
  const SLOW: Partial<PollPolicy> = {
    initialDelayMs: 30_000,
    maxDelayMs: 60_000,
    multiplier: 1.5,
    jitter: 0,
    deadlineMs: 600_000,
    activityTimeoutMs: 5_000,
    cancelConfirmDeadlineMs: 10_000,
  };

  describe('reference provider: signed webhooks', () => {
    let s: Scenario<ReferenceFixture>;
    beforeAll(async () => {
      s = await reference({ profile: { concurrency: 16, minRunMs: 1_500 } }, { webhooks: true });
    });
    afterAll(async () => s?.stop());

    it('the signed completion event wakes the job long before its first poll; the duplicate delivery has no effect; the secret is in no record', async () => {
      const sim = s.fixture.sim;
      sim.faults.add({ urlContains: 'signed-wake', action: 'duplicate_webhook' });
      const url = `${pages.pageUrl('001')}?signed-wake`;
      const t0 = Date.now();
      const ref = await s.start({ url, key: 'signed-1', policy: SLOW });
      await s.waitFor(ref.jobId, ['completed'], 60_000);
      expect(Date.now() - t0).toBeLessThan(50_000);
      const taskId = (await s.store.jobs.get(ref.jobId))!.task_id!;
      const sent = sim.stats().webhooks.log.filter((a) => a.job_id === taskId);
      expect(sent).toHaveLength(2);
      expect(new Set(sent.map((a) => a.event_id)).size).toBe(1);
      expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).map((d) => d.outcome)).toEqual(['woken']);
      expect(await s.leakedSecrets(ref.jobId)).toEqual([]);
      expect(s.api!.logs()).not.toContain(s.api!.secret);
    });

    it('a bad signature is 401 and quarantined by hash only; nothing changes', async () => {
      const event = {
        event_id: 'evt_bad_sig',
        type: 'job.completed',
        job_id: 'job_x',
        client_ref: null,
        status: 'completed',
      };
      const body = JSON.stringify(event);
      const r = await s.api!.call(null, 'POST', `/v1/webhooks/${s.name}`, {
        body,
        headers: { 'content-type': 'application/json', 'x-sim-signature': simWebhookSignature(body, 'not-the-secret') },
      });
      expect(r.status).toBe(401);
      expect(await r.json()).toMatchObject({ type: '/problems/invalid-signature' });
      const q = (await listQuarantine(s.store)).filter((x) => x.event_id === 'evt_bad_sig');
      expect(q.map((x) => [x.reason, x.body])).toEqual([['invalid_signature', '']]);
      const onTokenRoute = await s.api!.call(null, 'POST', `/v1/webhooks/${s.name}/${'0'.repeat(64)}`, {
        body,
        headers: { 'content-type': 'application/json' },
      });
      expect(onTokenRoute.status).toBe(404);
    });
  });

  describe('reference provider: unsigned webhooks on the per-job token route', () => {
    let s: Scenario<ReferenceFixture>;
    beforeAll(async () => {
      s = await reference(
        { profile: { concurrency: 16, minRunMs: 1_500 } },
        { webhooks: true, entry: { webhookSignature: false } },
      );
    });
    afterAll(async () => s?.stop());

    const deliver = (event: Record<string, unknown>, token?: string) =>
      s.api!.call(null, 'POST', token === undefined ? `/v1/webhooks/${s.name}` : `/v1/webhooks/${s.name}/${token}`, {
        json: event,
      });

    it('only the job’s own token is accepted (constant-time check), before dedupe; wrong tokens are 401 and quarantined; the token never reaches the logs', async () => {
      const sim = s.fixture.sim;
      sim.faults.add({ urlContains: 'token-hold', action: 'hold', holdIn: 'running' });
      sim.faults.add({ urlContains: 'token-other', action: 'hold', holdIn: 'running' });
      const ref = await s.start({ url: `${pages.pageUrl('002')}?token-hold`, key: 'token-1', policy: SLOW });
      const other = await s.start({ url: `${pages.pageUrl('002')}?token-other`, key: 'token-2', policy: SLOW });
      const row = await s.waitFor(ref.jobId, ['pending']);
      await s.waitFor(other.jobId, ['pending']);
      const event = {
        event_id: 'evt_token_1',
        type: 'job.running',
        job_id: row.task_id,
        client_ref: null,
        status: 'running',
      };
      for (const token of [undefined, '0'.repeat(64), s.callbackToken(other.jobId), 'short']) {
        const bad = await deliver(event, token);
        expect(bad.status, String(token)).toBe(401);
        expect(await bad.json()).toMatchObject({ type: '/problems/invalid-webhook-token' });
      }
      expect(await s.store.webhooks.listDeliveries({ provider: s.name })).toEqual([]);
      const kept = (await listQuarantine(s.store)).filter((q) => q.event_id === 'evt_token_1');
      expect(kept.map((q) => q.reason)).toEqual(['invalid_token', 'invalid_token', 'invalid_token', 'invalid_token']);
      expect(kept.every((q) => q.body === '')).toBe(true);

      const token = s.callbackToken(ref.jobId);
      const ok = await deliver(event, token);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ received: true, event_id: 'evt_token_1', outcome: 'woken' });
      const again = await deliver(event, token);
      expect(await again.json()).toMatchObject({ outcome: 'duplicate' });
      await waitFor(() => sim.getJob(row.task_id!)!.status_request_times.length >= 1, 30_000, 'the woken status check');
      expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId })).map((d) => d.outcome)).toEqual(['woken']);
      expect(s.api!.logs()).not.toContain(token);
      expect(s.api!.logs()).toContain(`/v1/webhooks/${s.name}/[REDACTED]`);

      const unknown = await deliver(
        { event_id: 'evt_token_unknown', type: 'job.completed', job_id: 'job_nobody', status: 'completed' },
        token,
      );
      // An unknown job answers like a wrong token (no existence oracle for unauthenticated callers).
      expect(unknown.status).toBe(401);
      expect(await unknown.json()).toMatchObject({ type: '/problems/invalid-webhook-token' });
      expect((await listQuarantine(s.store)).find((q) => q.event_id === 'evt_token_unknown')).toMatchObject({
        reason: 'unmatched',
        body: '',
      });
      sim.release(row.task_id!);
      sim.release((await s.store.jobs.get(other.jobId))!.task_id!);
    });

    it('(needs workflow v2: activities pass callback(jobId) to submit) the provider’s own unsigned deliveries reach the token URL and wake the job', async () => {
      const url = `${pages.pageUrl('001')}?token-e2e`;
      const t0 = Date.now();
      const ref = await s.start({ url, key: 'token-e2e', policy: SLOW });
      const job = await waitFor(
        () => s.fixture.sim.jobsFor('acme').find((j) => j.url === url),
        10_000,
        'the provider job',
      );
      expect(job.webhook_url).toBe(`${s.api!.webhookUrl}/${s.callbackToken(ref.jobId)}`);
      await s.waitFor(ref.jobId, ['completed'], 60_000);
      expect(Date.now() - t0).toBeLessThan(50_000);
      expect((await s.store.webhooks.listDeliveries({ jobId: ref.jobId }))[0]).toMatchObject({ outcome: 'woken' });
    });
  });
});
