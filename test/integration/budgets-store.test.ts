/**
 * Budgets and fair shares in the store, against both dialects (a SQLite file and a real
 * PostgreSQL server, where two store connections stand for two workers): many concurrent
 * submits never reserve past a budget; a job's end settles what it reserved (at the provider's
 * report, at its estimate, or at nothing when nothing was created) and a refusal releases it, so
 * nothing is leaked; an account's policy and what is left come back with a refusal; a job of an
 * account without budgets pays no store statement for them; the key's free slots go to waiting
 * accounts by weight, and within an account by priority.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/index.js';
import { bothDialects } from '../helpers/postgres.js';

const { urlOf } = bothDialects('scrape-budgets-test-');

const COST = { unit: 'credits', estimate: 1, failedFree: false };
const WIDE = { initial: 10_000 };

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`budgets and fair shares on ${dialect}`, () => {
    let a: Store;
    let b: Store;
    let n = 0;
    const run = `${dialect}-${Date.now().toString(36)}`;
    beforeAll(async () => {
      const url = urlOf(dialect, 'store.db');
      a = await openStore(url);
      // Two connections stand for two workers on PostgreSQL. SQLite's driver is synchronous: two
      // connections of one process would wait for each other's lock on a blocked event loop, so
      // its two workers are two processes (the budget chaos test); here one connection serves both.
      b = dialect === 'postgres' ? await openStore(url) : a;
    });
    afterAll(async () => {
      await a?.close();
      if (b !== a) await b?.close();
    });

    /** Registers a job of `account` on provider `p`, waiting for a slot of key `label`. */
    const job = async (account: string, label: string, priority = 0) => {
      const id = `scrape:${account}:${run}-${n++}`;
      await a.jobs.insert({
        id,
        account,
        idem_key: id,
        provider: 'p',
        request_hash: 'h',
        url: 'https://e.x/',
        input: '{}',
        options: '{}',
        batch_id: null,
        workflow_id: id,
        task_id: null,
        deadline_at: null,
        priority,
      });
      await a.jobs.setProviderAccount(id, label, label);
      return id;
    };

    it('two workers and 200 concurrent submits never reserve past a budget that admits 50', async () => {
      const account = `many-${run}`;
      await a.budgets.set({ account, provider: 'p', unit: 'credits', period: 'day', amount: 50 }, 'operator');
      const ids = await Promise.all(Array.from({ length: 200 }, () => job(account, `k-${run}`)));
      const outcomes = await Promise.all(
        ids.map((id, i) =>
          (i % 2 ? a : b).slots.reserveSubmit(id, { label: `k-${run}` }, WIDE, false, undefined, { cost: COST }),
        ),
      );
      const kinds = outcomes.map((o) => o.kind);
      expect(kinds.filter((k) => k === 'reserved')).toHaveLength(50);
      expect(kinds.filter((k) => k === 'over_budget')).toHaveLength(150);
      const [usage] = await a.budgets.list({ account });
      expect(usage).toMatchObject({ reserved: 50, spent: 0, remaining: 0, peak: 50 });
      const refused = outcomes.find((o) => o.kind === 'over_budget');
      expect(refused).toMatchObject({
        refusal: { amount: 50, remaining: 0, estimate: 1, period: 'day', policy: { onExceeded: 'refuse' } },
      });
      expect(await a.budgets.leaks()).toEqual([]);
    });

    it('a job ends settled at what the provider reported, at its estimate, or at nothing; a refusal releases; nothing leaks', async () => {
      const account = `settle-${run}`;
      await a.budgets.set({ account, provider: 'p', unit: 'credits', period: 'month', amount: 100 }, 'operator');
      await a.budgets.setPolicy(account, { onExceeded: 'hold', cancelRunning: false }, 'operator');
      const label = `s-${run}`;
      const reserve = async (id: string, estimate: number) =>
        a.slots.reserveSubmit(id, { label }, WIDE, false, undefined, { cost: { ...COST, estimate } });
      // Completed with a report: settles at the report (3), not the estimate (5).
      const done = await job(account, label);
      expect((await reserve(done, 5)).kind).toBe('reserved');
      await a.jobs.bindTask({ jobId: done, taskId: `t-${done}`, providerStatus: 'queued', source: 'test' });
      await a.polling.recordCheck(done, { providerStatus: 'completed', state: 'completed', cost: 3 }, 0);
      await a.results.writeOnce(
        done,
        'p',
        `t-${done}`,
        {
          url: 'https://e.x/',
          finalUrl: null,
          httpStatus: 200,
          title: 't',
          byline: null,
          excerpt: null,
          lang: null,
          siteName: null,
          publishedTime: null,
          text: 't',
          markdown: 'm',
          links: [],
          contentLength: 1,
        },
        null,
      );
      // Interrupted without any report: settles at its estimate (2).
      const lost = await job(account, label);
      await reserve(lost, 2);
      await a.jobs.bindTask({ jobId: lost, taskId: `t-${lost}`, providerStatus: 'queued', source: 'test' });
      await a.jobs.transition(lost, 'tracking_interrupted');
      // Refused at submit (nothing created): released, reserves again later, then fails without a task: nothing.
      const refused = await job(account, label);
      await reserve(refused, 4);
      expect(await a.budgets.release(refused)).toBe(4);
      await a.jobs.clearSubmitIntent(refused);
      await a.jobs.transition(refused, 'failed');
      const rows = await Promise.all([done, lost, refused].map((id) => a.jobs.get(id)));
      expect(rows.map((r) => [r?.cost_settled, r?.cost_source, r?.cost_reserved])).toEqual([
        [3, 'reported', 0],
        [2, 'estimate', 0],
        [null, null, 0],
      ]);
      const [usage] = await a.budgets.list({ account });
      expect(usage).toMatchObject({ reserved: 0, spent: 5, remaining: 95 });
      // A resumed job that ends again with a report is corrected by the difference.
      await a.jobs.resume(lost, { resumed: true });
      await a.polling.recordCheck(lost, { providerStatus: 'failed', state: 'failed', cost: 7 }, 0);
      await a.jobs.transition(lost, 'failed');
      expect((await a.budgets.list({ account }))[0]).toMatchObject({ reserved: 0, spent: 10 });
      expect(await a.budgets.leaks()).toEqual([]);
      // Over the budget, under `hold`: the refusal names what is left and when the month renews.
      const big = await job(account, label);
      const over = await reserve(big, 91);
      expect(over).toMatchObject({ kind: 'over_budget', refusal: { remaining: 90, policy: { onExceeded: 'hold' } } });
      const renews = over.kind === 'over_budget' ? Date.parse(over.refusal.renewsAt!) : 0;
      expect(new Date(renews).getUTCDate()).toBe(1);
      expect(await a.budgets.check(account, 'p', 'credits', 91)).toMatchObject({ remaining: 90 });
      expect(await a.budgets.check(account, 'p', 'credits', 90)).toBeUndefined();
    });

    it.runIf(dialect === 'sqlite')('a job of an account without budgets pays no store statement for them', async () => {
      const count = () => a.sqliteStatements!.prepared + a.sqliteStatements!.reused;
      const label = `free-${run}`;
      // The key's first submit makes its limit row; both submits measured come after it.
      await a.slots.reserveSubmit(await job(`first-${run}`, label), { label }, WIDE, false);
      const plain = await job(`plain-${run}`, label);
      const before = count();
      await a.slots.reserveSubmit(plain, { label }, WIDE, false);
      const without = count() - before;
      const costed = await job(`plain-${run}`, label);
      const mid = count();
      const r = await a.slots.reserveSubmit(costed, { label }, WIDE, false, undefined, { cost: COST });
      expect(count() - mid).toBe(without);
      expect(r).toMatchObject({ kind: 'reserved', holdsCost: false });
      // It still carries its estimate: the same write recorded it.
      expect(await a.jobs.get(costed)).toMatchObject({ cost_unit: 'credits', cost_estimated: 1, cost_reserved: null });
    });

    it('a budget removed and set again starts from what its running jobs hold: they settle in it and nothing passes the amount', async () => {
      const account = `reset-${run}`;
      const budget = { account, provider: 'p', unit: 'credits', period: 'total', amount: 2 } as const;
      await a.budgets.set(budget, 'operator');
      const label = `r-${run}`;
      const reserve = async (id: string) =>
        a.slots.reserveSubmit(id, { label }, WIDE, false, undefined, { cost: { ...COST, estimate: 1 } });
      const first = await job(account, label);
      expect((await reserve(first)).kind).toBe('reserved');
      const id = (await a.budgets.list({ account }))[0]!.id;
      expect(await a.budgets.remove(id)).toBe(true);
      await a.budgets.set(budget, 'operator');
      expect((await a.budgets.list({ account }))[0]).toMatchObject({ reserved: 1, spent: 0 });
      const second = await job(account, label);
      expect((await reserve(second)).kind).toBe('reserved');
      // The first job ends: it settles in the budget it reserved in, and the second still holds its share.
      await a.jobs.bindTask({ jobId: first, taskId: `t-${first}`, providerStatus: 'queued', source: 'test' });
      await a.polling.recordCheck(first, { providerStatus: 'failed', state: 'failed', cost: 1 }, 0);
      await a.jobs.transition(first, 'failed');
      expect((await a.budgets.list({ account }))[0]).toMatchObject({ reserved: 1, spent: 1, remaining: 0 });
      expect((await reserve(await job(account, label))).kind).toBe('over_budget');
      expect(await a.budgets.leaks()).toEqual([]);
    });

    it("a key's free slots go to waiting accounts by weight (1 : 3), and within an account by priority", async () => {
      const label = `fair-${run}`;
      const weights = { [`light-${run}`]: 1, [`heavy-${run}`]: 3 };
      const light = await Promise.all(Array.from({ length: 6 }, () => job(`light-${run}`, label)));
      const heavy = await Promise.all(Array.from({ length: 6 }, () => job(`heavy-${run}`, label)));
      const urgent = await job(`light-${run}`, label, 5);
      // The key admits one job; each turnover grants the next slot, which the granted job then takes.
      await a.limits.noteSubmitRefused(label, 1, 1); // the key's limit row: one job at a time
      let holder: string | undefined;
      const order: string[] = [];
      for (let i = 0; i < 8; i++) {
        if (holder) {
          await a.jobs.bindTask({ jobId: holder, taskId: `t-${holder}`, providerStatus: 'queued', source: 'test' });
          await a.jobs.transition(holder, 'completed');
        }
        const grants = await (i % 2 ? a : b).slots.grantFree(label, weights);
        expect(grants).toHaveLength(1);
        holder = grants[0]!.jobId;
        expect([...light, ...heavy, urgent]).toContain(holder);
        order.push(holder === urgent ? 'urgent' : grants[0]!.account.startsWith('heavy') ? 'heavy' : 'light');
        // The granted job takes its slot (its grant counts as active until then).
        const r = await b.slots.reserveSubmit(holder, { label }, { initial: 1, max: 1 }, false, undefined, {
          fair: { weights },
        });
        expect(r.kind).toBe('reserved');
      }
      // Three of every four slots go to the heavy account; the light account's first is its urgent job.
      expect(order.filter((o) => o === 'heavy')).toHaveLength(6);
      expect(order.filter((o) => o !== 'heavy')[0]).toBe('urgent');
    });

    it('a job asking for a free slot yields it to the account whose turn it is', async () => {
      const label = `yield-${run}`;
      const fair = { fair: { weights: {} } };
      const limits = { initial: 2, max: 2 };
      const occupant = await job(`first-${run}`, label);
      expect((await a.slots.reserveSubmit(occupant, { label }, limits, false, undefined, fair)).kind).toBe('reserved');
      const mine = await job(`first-${run}`, label);
      const theirs = await job(`second-${run}`, label);
      // `first` holds a slot and `second` none: the one free slot is `second`'s turn.
      const r = await a.slots.reserveSubmit(mine, { label }, limits, false, undefined, fair);
      expect(r).toMatchObject({ kind: 'full', turnOf: `second-${run}`, grants: [{ jobId: theirs }] });
      expect((await b.slots.reserveSubmit(theirs, { label }, limits, false, undefined, fair)).kind).toBe('reserved');
    });
  });
}
