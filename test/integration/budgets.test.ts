/**
 * Budgets through real servers: the Temporal dev server, a worker, the reference provider (which
 * reports `credits_used` per job as its contract says), a SQLite store, the HTTP API and the CLI.
 * A job settles at the credits the provider reported and carries its cost beside its Temporal
 * Actions; a job a budget cannot take is refused at the door (the API's `402` problem naming the
 * budget, its period and what is left; the CLI's exit code 4) or, under `hold`, waits saying so
 * until the budget is raised (which tells it to submit at once); the worker refuses what the
 * door could not see; a running job is cancelled for money only when the account asks for it.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/api/auth.js';
import { startApi, type RunningApi } from '../../src/api/main.js';
import { BudgetExceededError, ScrapeClient } from '../../src/client/index.js';
import { runCli } from '../helpers/cli.js';
import { fixturePageNames, startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, waitFor, waitForState, type Stack } from '../helpers/stack.js';

const KEY = 'sk_scrape_test_budgets_0123456789abcdef0123456';
let stack: Stack;
let cheapClient: ScrapeClient;
let api: RunningApi;
let pages: PageServer;
let n = 0;

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ worker: false });
  // `cheap`: the same provider with an estimate below what it bills (1 credit), for overruns.
  stack.config.providers.cheap = { ...stack.config.providers.reference!, cost: { estimate: 0.5 } };
  fs.writeFileSync(stack.configFile, JSON.stringify(stack.config));
  await stack.startWorker();
  cheapClient = new ScrapeClient({
    temporal: stack.temporal,
    store: stack.store,
    taskQueue: stack.config.temporal.taskQueue,
    defaultProvider: 'reference',
    providers: Object.keys(stack.config.providers),
  });
  process.env.SCRAPE_API_METRICS_PORT = '0';
  process.env.SCRAPE_API_KEYS = JSON.stringify({ keys: [{ account: 'acme', sha256: hashApiKey(KEY) }] });
  api = await startApi({ configFile: stack.configFile, host: '127.0.0.1', port: 0, logger: false });
}, 120_000);

afterAll(async () => {
  await api?.close();
  await stack?.stop();
  await pages?.close();
  delete process.env.SCRAPE_API_METRICS_PORT;
  delete process.env.SCRAPE_API_KEYS;
});

const page = () => `${pages.pageUrl(fixturePageNames()[n % fixturePageNames().length]!)}?b=${n++}`;
const post = (body: Record<string, unknown>) =>
  fetch(`${api.url}/v1/scrapes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ policy: FAST_POLICY, ...body }),
  });
const budgets = () => stack.client.budgets;

describe('budgets through the API, the CLI and a worker', () => {
  it("a job settles at the credits the provider reported, beside its Temporal Actions; the budget's metrics show it", async () => {
    await budgets().set('acme', { provider: 'reference', unit: 'credits', period: 'day', amount: 10 });
    const ref = await stack.client.startScrape({ account: 'acme', url: page(), policy: FAST_POLICY });
    const row = await waitForState(stack.store, ref.jobId, ['completed'], 60_000);
    await stack.temporal.workflow.getHandle(ref.jobId).result(); // its last Action (the final upsert) is in history
    const task = stack.sim.getJob(row.task_id!)!;
    expect(task.credits_used).toBe(1);
    const cost = await budgets().jobCost('acme', ref.jobId);
    expect(cost.cost).toMatchObject({ unit: 'credits', estimated: 1, reserved: 0, settled: 1, source: 'reported' });
    expect(cost.temporal?.actions).toBeGreaterThanOrEqual(3);
    expect(cost.temporal?.byKind.start_workflow).toBe(1);
    const [b] = await budgets().list('acme');
    expect(b).toMatchObject({ spent: 1, reserved: 0, remaining: 9 });
    const got = await (
      await fetch(`${api.url}/v1/scrapes/${encodeURIComponent(ref.jobId)}/cost`, {
        headers: { authorization: `Bearer ${KEY}` },
      })
    ).json();
    expect(got).toMatchObject({ cost: { settled: 1, unit: 'credits' }, temporal: { actions: cost.temporal!.actions } });
    const metrics = await (await fetch(`${api.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/scrape_budget_spent\{account="acme",provider="reference",unit="credits",period="day"\} 1/);
    expect(metrics).toMatch(
      /scrape_budget_remaining\{account="acme",provider="reference",unit="credits",period="day"\} 9/,
    );
  }, 120_000);

  it('a spent budget refuses at the door: the API answers 402 naming it, the client throws, the CLI exits 4', async () => {
    const [b] = await budgets().list('acme');
    await budgets().set('acme', { provider: 'reference', period: 'day', amount: b!.spent, unit: 'credits' });
    const jobsBefore = stack.sim.jobsFor('acme').length;
    const r = await post({ url: page() });
    expect(r.status).toBe(402);
    expect(r.headers.get('content-type')).toMatch(/problem\+json/);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await r.json()).toMatchObject({
      type: '/problems/budget-exceeded',
      budget: 'acme|reference|credits|day',
      unit: 'credits',
      period: 'day',
      remaining: 0,
      estimate: 1,
    });
    const cli = await runCli(['submit', page(), '--json'], { config: stack.configFile });
    expect(cli.code).toBe(4);
    expect(JSON.parse(cli.stdout)).toMatchObject({
      error: { code: 'budget_exceeded', exitCode: 4, details: { budget: 'acme|reference|credits|day', remaining: 0 } },
    });
    // The stack's client has no provider configuration (no estimate): it refuses once nothing is left.
    await expect(stack.client.startScrape({ account: 'acme', url: page() })).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
    expect(stack.sim.jobsFor('acme').length).toBe(jobsBefore);
  }, 120_000);

  it('under `hold` a job waits saying so, and a raised budget makes it submit at once', async () => {
    await budgets().setPolicy('acme', { onExceeded: 'hold', cancelRunning: false });
    const r = await post({ url: page() });
    expect(r.status).toBe(202);
    const { job_id: jobId } = (await r.json()) as { job_id: string };
    const held = await waitFor(
      async () => {
        const s = await (
          await fetch(`${api.url}/v1/scrapes/${encodeURIComponent(jobId)}`, {
            headers: { authorization: `Bearer ${KEY}` },
          })
        ).json();
        return s.waiting?.reason === 'budget' ? s : undefined;
      },
      30_000,
      'the job to wait for its budget',
    );
    expect(held.waiting.message).toMatch(/acme\|reference\|credits\|day.*0 credits left/);
    const live = await stack.client.getLiveView('acme', jobId);
    expect(live.waiting?.reason).toBe('budget');
    const cli = await runCli(['status', jobId, '--json'], { config: stack.configFile });
    expect(JSON.parse(cli.stdout)).toMatchObject({ waiting: { reason: 'budget' } });
    const [b] = await budgets().list('acme');
    await budgets().set('acme', { provider: 'reference', unit: 'credits', period: 'day', amount: b!.amount + 5 });
    await waitForState(stack.store, jobId, ['completed'], 60_000);
    const history = await stack.temporal.workflow.getHandle(jobId).fetchHistory();
    const signals = (history.events ?? [])
      .map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)
      .filter(Boolean);
    expect(signals).toContain('submitNow');
  }, 120_000);

  it('the worker refuses what the door could not see (a job estimated past what is left), sending nothing', async () => {
    await budgets().setPolicy('acme', { onExceeded: 'refuse', cancelRunning: false });
    const [b] = await budgets().list('acme');
    await budgets().set('acme', { provider: 'reference', unit: 'credits', period: 'day', amount: b!.spent + 0.5 });
    const jobsBefore = stack.sim.jobsFor('acme').length;
    const ref = await stack.client.startScrape({ account: 'acme', url: page(), policy: FAST_POLICY });
    const row = await waitForState(stack.store, ref.jobId, ['failed'], 60_000);
    expect(JSON.parse(row.last_error!)).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(stack.sim.jobsFor('acme').length).toBe(jobsBefore);
    expect(await stack.store.budgets.leaks()).toEqual([]);
  }, 120_000);

  it('a running job that goes past its budget is cancelled only when the account asks for it', async () => {
    const cheap = cheapClient.budgets;
    await cheap.set('acme', { provider: 'cheap', unit: 'credits', period: 'day', amount: 0.5 });
    const running = async () => {
      stack.sim.faults.add({ account: 'acme', endpoint: 'submit', action: 'never_finish', times: 1 });
      const ref = await cheapClient.startScrape({
        account: 'acme',
        url: page(),
        provider: 'cheap',
        policy: { ...FAST_POLICY, fastPathMs: 0 },
      });
      // The provider reports 1 credit for a job reserved at 0.5: its budget of 0.5 is overrun.
      await waitFor(async () => (await stack.store.jobs.get(ref.jobId))?.cost_reported === 1, 30_000, 'a report');
      return ref.jobId;
    };
    const kept = await running();
    await waitFor(async () => Number((await stack.store.jobs.get(kept))?.status_checks) >= 4, 30_000, 'more checks');
    expect((await stack.store.jobs.get(kept))?.state).toBe('pending');
    await stack.client.cancelScrape('acme', kept, { reason: 'test over' });
    await waitForState(stack.store, kept, ['cancelled'], 30_000);

    await cheap.setPolicy('acme', { onExceeded: 'refuse', cancelRunning: true });
    await cheap.set('acme', { provider: 'cheap', unit: 'credits', period: 'day', amount: 1.5 });
    const cut = await running();
    const row = await waitForState(stack.store, cut, ['cancelled'], 60_000);
    expect(row.cost_settled).toBe(1);
    const timeline = await stack.client.timeline('acme', cut);
    expect(timeline.map((e) => e.type)).toContain('budget_overrun');
    expect(await stack.store.budgets.leaks()).toEqual([]);
  }, 180_000);
});
