/**
 * A key's slots in the store, against both dialects: concurrent submits of two workers never take
 * more slots than the key's limit (on SQLite two processes on one file, on PostgreSQL two
 * connections), and a first submit under a free key whose account has no budget and whose key no
 * other account waits for is one statement on SQLite, the same reservation the transaction makes
 * (which decides every other case), with the key's shared cool-downs read for the submit that follows.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src/store/index.js';
import { bothDialects } from '../helpers/postgres.js';

const run = promisify(execFile);
const { urlOf } = bothDialects('scrape-slots-test-');

const COST = { unit: 'credits', estimate: 1, failedFree: false };
const RESULT = {
  url: 'https://e.x/',
  finalUrl: 'https://e.x/',
  httpStatus: 200,
  title: 't',
  byline: null,
  excerpt: null,
  lang: 'en',
  siteName: null,
  publishedTime: null,
  text: 't',
  markdown: 'm',
  links: [],
  contentLength: 1,
};

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`a key's slots on ${dialect}`, () => {
    let a: Store;
    let url: string;
    let n = 0;
    const tag = `${dialect}-${Date.now().toString(36)}`;
    beforeAll(async () => {
      url = urlOf(dialect, 'store.db');
      a = await openStore(url);
    });
    afterAll(async () => {
      await a?.close();
    });

    /** Registers a job of `account` on provider `p`. */
    const job = async (account: string, priority = 0) => {
      const id = `scrape:${account}:${tag}-${n++}`;
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
      return id;
    };
    const reserve = (store: Store, id: string, label: string, initial: number) =>
      store.slots.reserveSubmit(id, { label }, { initial }, false, undefined, {
        cost: COST,
        fair: {},
        provider: { account: label, key: label },
        cooldowns: [label, `${label}/submits`],
      });

    it('two workers and 200 concurrent submits never take more than the key limit of 50', async () => {
      const label = `many-${tag}`;
      const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => job(`acct-${i % 4}`)));
      let kinds: string[];
      if (dialect === 'sqlite') {
        // Two processes on one file: SQLite's driver is synchronous, so one process would serialise them itself.
        const startAt = String(Date.now() + 5_000);
        const worker = (part: string[]) =>
          run(
            process.execPath,
            ['--import', 'tsx', 'test/helpers/reserveMain.ts', url, startAt, label, '50', ...part],
            {
              encoding: 'utf8',
            },
          ).then((r) => JSON.parse(r.stdout) as string[]);
        const parts = await Promise.all([
          worker(ids.filter((_, i) => i % 2 === 0)),
          worker(ids.filter((_, i) => i % 2)),
        ]);
        kinds = parts.flat();
      } else {
        const b = await openStore(url);
        try {
          kinds = (await Promise.all(ids.map((id, i) => reserve(i % 2 ? a : b, id, label, 50)))).map((r) => r.kind);
        } finally {
          await b.close();
        }
      }
      expect(kinds.filter((k) => k === 'reserved')).toHaveLength(50);
      expect(kinds.filter((k) => k === 'full')).toHaveLength(150);
      const rows = await Promise.all(ids.map((id) => a.jobs.get(id)));
      expect(rows.filter((r) => r?.submit_intent_at)).toHaveLength(50);
      expect(rows.every((r) => r?.provider_key === label)).toBe(true);
    }, 60_000);

    it('a slot taken at submit is free again once its job ends, whichever way it ends', async () => {
      const taskOf = (id: string) => `t-${id}`;
      const bind = (id: string) =>
        a.jobs.bindTask({
          jobId: id,
          taskId: taskOf(id),
          providerStatus: 'queued',
          source: 'submit',
          providerAccount: 'p@h',
          // The fast path: the answer claims the first checks' polling generation with the bind.
          claim: { generation: 7, deadlineAt: new Date(Date.now() + 60_000).toISOString() },
        });
      const ends: Record<string, (id: string) => Promise<unknown>> = {
        'refused: nothing was created': (id) => a.jobs.clearSubmitIntent(id),
        'answered, then completed with its result': async (id) => {
          await bind(id);
          await a.results.writeOnce(id, 'p', taskOf(id), RESULT, 60_000);
        },
        'answered, then its tracking interrupted': async (id) => {
          await bind(id);
          await a.jobs.transition(id, 'tracking_interrupted');
        },
        'unanswered, reconciled absent every round, failed': async (id) => {
          await a.jobs.transition(id, 'unknown');
          await a.jobs.transition(id, 'failed');
        },
        'cancelled before its answer, which came while cancelling': async (id) => {
          await a.jobs.transition(id, 'cancelling');
          await bind(id);
          await a.jobs.transition(id, 'cancelled');
        },
        'failed, its answer late': async (id) => {
          await a.jobs.transition(id, 'failed');
          expect(await bind(id)).toMatchObject({ kind: 'final' });
        },
      };
      for (const [how, end] of Object.entries(ends)) {
        const label = `ends-${tag}-${how.split(/\W+/).join('-')}`;
        const holder = await job('acme');
        expect(await reserve(a, holder, label, 1), how).toMatchObject({ kind: 'reserved', active: 0, limit: 1 });
        const next = await job('acme');
        expect(await reserve(a, next, label, 1), how).toMatchObject({ kind: 'full', active: 1 });
        await end(holder);
        expect(await reserve(a, next, label, 1), how).toMatchObject({ kind: 'reserved', active: 0 });
      }
    });

    it.runIf(dialect === 'sqlite')(
      'a submit under a free key, with no budget and no other account waiting, is one statement; every other case is decided by the transaction',
      async () => {
        const count = () => a.sqliteStatements!.prepared + a.sqliteStatements!.reused;
        const label = `quick-${tag}`;
        // The key's first submit: one statement, and one more that makes the key's limit row.
        const first = await job('acme');
        let before = count();
        expect(await reserve(a, first, label, 2)).toMatchObject({ kind: 'reserved', active: 0, limit: 2 });
        expect(count() - before).toBe(2);
        expect(
          await a.db.selectFrom('provider_limits').select('active_limit').where('label', '=', label).executeTakeFirst(),
        ).toEqual({ active_limit: 2 });
        const second = await job('acme');
        // The submit's cool-downs come back with it: the key's submits are held, the key itself is not.
        const until = Date.now() + 60_000;
        await a.providerKeys.setCooldown(`${label}/submits`, until, 'quota exhausted');
        before = count();
        expect(await reserve(a, second, label, 2)).toEqual({
          kind: 'reserved',
          active: 1,
          limit: 2,
          grants: [],
          holdsCost: false,
          seen: new Map([
            [label, undefined],
            [`${label}/submits`, { untilMs: until, reason: 'quota exhausted', releaseNextMs: 0 }],
          ]),
        });
        expect(count() - before).toBe(1);
        expect(await a.jobs.get(second)).toMatchObject({
          provider_account: label,
          provider_key: label,
          submit_attempts: 1,
          cost_unit: 'credits',
          cost_estimated: 1,
          waiting: null,
        });
        // The key is full: the transaction says so, with who waits.
        const third = await job('acme');
        expect(await reserve(a, third, label, 2)).toMatchObject({ kind: 'full', active: 2, limit: 2, waiting: 0 });
        expect((await a.jobs.get(third))?.provider_key).toBe(label);

        // Another account waits for the key: the fair queue decides, in the transaction.
        const spacious = `fair-${tag}`;
        await reserve(a, await job('acme'), spacious, 10);
        const waiting = await job('globex');
        await a.jobs.setProviderAccount(waiting, spacious, spacious);
        const mine = await job('acme');
        const mid = count();
        const r = await reserve(a, mine, spacious, 10);
        expect(count() - mid).toBeGreaterThan(1);
        expect(r).toMatchObject({ kind: 'reserved' });

        // A budget covers the job: its estimate is reserved in it, in the transaction.
        const paid = `paid-${tag}`;
        await a.budgets.set({ account: paid, provider: 'p', unit: 'credits', period: 'day', amount: 5 }, 'operator');
        await reserve(a, await job(paid), `budget-${tag}`, 10);
        const costed = await job(paid);
        expect(await reserve(a, costed, `budget-${tag}`, 10)).toMatchObject({ kind: 'reserved', holdsCost: true });
        expect((await a.jobs.get(costed))?.cost_reserved).toBe(1);
        const [usage] = await a.budgets.list({ account: paid });
        expect(usage).toMatchObject({ reserved: 2 });
      },
    );
  });
}
