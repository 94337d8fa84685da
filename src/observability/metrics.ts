/**
 * The product's Prometheus metrics (prom-client) and the small functions that record them. One
 * registry per process; the worker's and the API's `/metrics` serve it (see `metricsServer.ts`).
 *
 * Labels are bounded, never a URL, a key, an account's secret or a job ID: `state` (a job state,
 * `JOB_STATES`), `provider` (a configured provider name), `endpoint` (a method + path template such as
 * `GET /api/jobs/:id`), `status_code` (HTTP status or `network`), `outcome` (a short word).
 *
 * Series (all prefixed `scrape_`, prom-client's default process metrics too): docs/operations.md
 * and docs/budgets.md (the budget gauges) list them; each one's `help` below says what it counts.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import client from 'prom-client';
import type { BudgetUsage } from '../model/budgets.js';
import { JOB_STATES } from '../model/states.js';

/** The process's registry (our series only; the worker's endpoint appends the SDK runtime's). */
export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry, prefix: 'scrape_' });

const boundedState = (s: string) => ((JOB_STATES as readonly string[]).includes(s) ? s : 'other');
const word = (s: string) => (/^[a-z][a-z0-9_]{0,39}$/.test(s) ? s : 'other');

function counter(name: string, help: string, labelNames: string[]) {
  return new client.Counter({ name, help, labelNames, registers: [registry] });
}

function histogram(name: string, help: string, labelNames: string[], buckets: number[]) {
  return new client.Histogram({ name, help, labelNames, buckets, registers: [registry] });
}

const transitions = counter('scrape_job_transitions_total', 'Job state transitions, by the state moved into.', [
  'state',
]);
const providerRequests = counter(
  'scrape_provider_requests_total',
  'HTTP requests to providers, by provider, endpoint template and status code (network: no answer).',
  ['provider', 'endpoint', 'status_code'],
);
const providerDuration = histogram(
  'scrape_provider_request_duration_seconds',
  'Duration of provider HTTP exchanges, seconds.',
  ['provider', 'endpoint'],
  [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
);
const rateLimited = counter('scrape_provider_rate_limited_total', 'Provider answers 429 Too Many Requests.', [
  'provider',
]);
const cooldowns = counter(
  'scrape_provider_cooldowns_total',
  'Shared cool-downs started or extended for a provider key.',
  ['provider'],
);
const statusChecks = histogram(
  'scrape_status_check_duration_seconds',
  'Duration of status checks (one provider status read, retries excluded), seconds.',
  ['outcome'],
  [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
);
const commitLag = histogram(
  'scrape_result_commit_lag_seconds',
  'Time from the provider reporting completion to our result commit, seconds.',
  [],
  [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
);
const reconciles = counter('scrape_reconcile_outcomes_total', 'Reconciliations of ambiguous submits, by outcome.', [
  'outcome',
]);
const webhooks = counter('scrape_webhook_deliveries_total', 'Provider webhook deliveries received, by outcome.', [
  'provider',
  'outcome',
]);
const activities = counter(
  'scrape_activity_executions_total',
  'Activity executions (attempts), by activity type and outcome.',
  ['activity', 'outcome'],
);
const activityDuration = histogram(
  'scrape_activity_duration_seconds',
  'Activity execution (attempt) duration, seconds.',
  ['activity', 'outcome'],
  [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
);

/** Counts a move of a job into `state` (call once per committed transition). */
export function recordTransition(state: string): void {
  transitions.inc({ state: boundedState(state) });
}

/** Records one status check: its duration in ms and outcome (`ok`, `terminal`, `error`, `cooldown`, …). */
export function observeStatusCheck(ms: number, outcome: string): void {
  statusChecks.observe({ outcome: word(outcome) }, ms / 1000);
}

/** Records the time in ms between the provider reporting completion and our result commit. */
export function observeResultCommitLag(ms: number): void {
  if (Number.isFinite(ms) && ms >= 0) commitLag.observe(ms / 1000);
}

/** Counts one reconcile outcome (`replayed`, `found`, `absent`, `unresolvable`, …). */
export function recordReconcile(outcome: string): void {
  reconciles.inc({ outcome: word(outcome) });
}

/** Counts one webhook delivery with its outcome (`woken`, `duplicate`, `quarantined`, `invalid_signature`, …). */
export function recordWebhookDelivery(provider: string, outcome: string): void {
  webhooks.inc({ provider: providerLabel(provider), outcome: word(outcome) });
}

/** Counts a shared cool-down of a provider key (`label` is `<provider>/<account>`; only the provider is kept). */
function recordCooldown(label: string): void {
  cooldowns.inc({ provider: providerLabel(label.split('/')[0] ?? '') });
}

/**
 * What the store reports, into this registry: pass it as `openStore(url, { metrics: storeMetrics })`
 * (the store's `StoreMetrics`; this module never imports the store).
 */
export const storeMetrics = { transition: recordTransition, cooldown: recordCooldown } as const;

const trackingLoops = new client.Gauge({
  name: 'scrape_tracking_loops',
  help: 'Jobs this worker tracks in detached polling loops (their trackStatus activities complete asynchronously).',
  registers: [registry],
});

/** A detached polling loop began (+1) or ended (-1) in this worker. */
export function countTrackingLoop(delta: 1 | -1): void {
  trackingLoops.inc(delta);
}

/**
 * Records one activity attempt. `detached`: the attempt's function returned for async completion
 * (a tracking loop goes on in the worker; its end is recorded again with the outcome it reported).
 */
export function recordActivity(
  activity: string,
  outcome: 'completed' | 'failed' | 'cancelled' | 'detached',
  ms: number,
): void {
  const a = /^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(activity) ? activity : 'other';
  activities.inc({ activity: a, outcome });
  activityDuration.observe({ activity: a, outcome }, ms / 1000);
}

// ---- provider requests ----------------------------------------------------------------------

const knownProviders = new Set<string>();
const providerContext = new AsyncLocalStorage<string>();

/** Declares the configured provider names (labels outside this set become `other`). */
export function setKnownProviders(names: Iterable<string>): void {
  for (const n of names) knownProviders.add(n);
}

function providerLabel(name: string | undefined): string {
  if (!name) return 'unknown';
  return knownProviders.has(name) || (knownProviders.size === 0 && /^[a-z][a-z0-9_-]{0,31}$/.test(name))
    ? name
    : 'other';
}

/** Runs `fn` with `provider` as the provider label of the requests it makes (set per activity by the worker). */
export function withProviderLabel<T>(provider: string | undefined, fn: () => T): T {
  return provider ? providerContext.run(provider, fn) : fn();
}

/** The provider label of the current activity, if any. */
export function currentProviderLabel(): string | undefined {
  return providerContext.getStore();
}

/**
 * The endpoint template of a request: method and URL path with identifier-like segments (anything
 * with a digit, longer than 24 characters, or not a plain word) replaced by `:id`; no host, no
 * query. E.g. `GET https://p.example/api/jobs/job_8f2a?token=x` → `GET /api/jobs/:id`.
 */
export function endpointTemplate(method: string, url: string): string {
  let pathname = '/';
  try {
    pathname = new URL(url).pathname;
  } catch {
    /* keep / */
  }
  const segs = pathname
    .split('/')
    .filter(Boolean)
    .slice(0, 8)
    .map((s) => (/^[A-Za-z][A-Za-z_-]{0,23}$/.test(s) ? s : ':id'));
  return `${method.toUpperCase()} /${segs.join('/')}`;
}

/**
 * Records one provider HTTP exchange (status `undefined` = no answer). `endpoint`: the request's
 * {@link endpointTemplate}, when the caller has it already (otherwise made from `method` and `url`).
 */
export function recordProviderRequest(r: {
  provider?: string;
  method: string;
  url: string;
  endpoint?: string;
  status?: number;
  ms: number;
}): void {
  const provider = providerLabel(r.provider ?? currentProviderLabel());
  const endpoint = r.endpoint ?? endpointTemplate(r.method, r.url);
  providerRequests.inc({ provider, endpoint, status_code: r.status === undefined ? 'network' : String(r.status) });
  providerDuration.observe({ provider, endpoint }, r.ms / 1000);
  if (r.status === 429) rateLimited.inc({ provider });
}

// ---- jobs by state (read from the store at scrape time) ----------------------------------------

/** What the jobs gauge needs from the store: counts by state. */
export type JobCountSource = () => Promise<Record<string, number>>;

let jobCounts: JobCountSource | undefined;
new client.Gauge({
  name: 'scrape_jobs',
  help: 'Jobs in the result store, by state (read at scrape time).',
  labelNames: ['state'],
  registers: [registry],
  async collect() {
    if (!jobCounts) return;
    this.reset();
    try {
      const counts = await jobCounts();
      for (const s of JOB_STATES) this.set({ state: s }, counts[s] ?? 0);
    } catch {
      // The store being unavailable must not break /metrics; the gauge is absent this time.
    }
  },
});

/** Sets where the `scrape_jobs{state}` gauge reads its counts (the worker's and API's store). */
export function setJobCountSource(source: JobCountSource | undefined): void {
  jobCounts = source;
}

// ---- budgets (read from the store at scrape time) ------------------------------------------------

/** What the budget gauges need from the store: every budget's standing in its current period. */
export type BudgetSource = () => Promise<readonly BudgetUsage[]>;

let budgetReadings: BudgetSource | undefined;
let budgetRead: Promise<readonly BudgetUsage[]> | undefined;

/** The budgets of this scrape, read once for the three gauges. */
function readBudgets(): Promise<readonly BudgetUsage[]> {
  if (!budgetReadings) return Promise.resolve([]);
  budgetRead ??= budgetReadings().finally(() => setTimeout(() => (budgetRead = undefined), 0));
  return budgetRead;
}

for (const [figure, help] of [
  ['spent', 'What the jobs settled in the budget’s current period, in its unit (read at scrape time).'],
  ['reserved', 'What running jobs hold reserved in the budget’s current period, in its unit.'],
  ['remaining', 'What the budget has left in its current period (amount − reserved − spent), in its unit.'],
] as const)
  new client.Gauge({
    name: `scrape_budget_${figure}`,
    help,
    labelNames: ['account', 'provider', 'unit', 'period'],
    registers: [registry],
    async collect() {
      if (!budgetReadings) return;
      this.reset();
      try {
        for (const b of await readBudgets())
          this.set({ account: b.account, provider: b.provider, unit: b.unit, period: b.period }, b[figure]);
      } catch {
        // The store being unavailable must not break /metrics; the gauges are absent this time.
      }
    },
  });

/** Sets where the `scrape_budget_{spent,reserved,remaining}{account,provider,unit,period}` gauges read (the store's budgets). */
export function setBudgetSource(source: BudgetSource | undefined): void {
  budgetReadings = source;
}

/** Resets every series (unit tests). */
export function resetMetrics(): void {
  registry.resetMetrics();
}
