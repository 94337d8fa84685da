/**
 * The result store: a connection (`db`, `kind`, `tx`, `migrate`, `ping`, `close`) and one
 * repository per responsibility over it. Every operation is a method of one repository:
 *
 * | repository | file | holds |
 * |---|---|---|
 * | `store.jobs` | `jobs.ts` | job rows: register, read, list, transitions, the task bound to a job |
 * | `store.results` | `results.ts` | results written once with their documents and bodies, retention purge |
 * | `store.findings` | `findings.ts` | timeline events, incidents, orphan findings |
 * | `store.polling` | `polling.ts` | poll state of the polling activity |
 * | `store.slots` | `slots.ts` | submit reservations: a slot under the key's adaptive limit by the key's fair queue, the estimate reserved in the budgets |
 * | `store.limits` | `limits.ts` | the adaptive limit of active jobs per provider key, learned from submits' answers |
 * | `store.budgets` | `budgets.ts` | budgets, their usage per period, each account's policy, settled costs |
 * | `store.providerKeys` | `providerKeys.ts` | cool-downs and release slots, counted refusals |
 * | `store.webhooks` | `webhooks.ts` | webhook deliveries and quarantine |
 * | `store.apiIdempotency` | `apiIdempotency.ts` | the HTTP API's `Idempotency-Key` records |
 *
 * Row mapping without I/O is in `rows.ts`, opening in `open.ts`; the budget ledger and the fair
 * queue that the repositories run inside their own transactions are `ledger.ts` and `fairQueue.ts`.
 */
import { ApiIdempotencyRepository } from './apiIdempotency.js';
import { StoreConnection } from './connection.js';
import { FindingsRepository } from './findings.js';
import { JobsRepository } from './jobs.js';
import { BudgetsRepository } from './budgets.js';
import { PollingRepository } from './polling.js';
import { SlotsRepository } from './slots.js';
import { ActiveLimitsRepository } from './limits.js';
import { ProviderKeysRepository } from './providerKeys.js';
import { ResultsRepository } from './results.js';
import { WebhooksRepository } from './webhooks.js';
import { jobInput, jobRow } from './rows.js';

/** Data access for jobs, results and what is kept about them. Construct with `openStore`. */
export class Store extends StoreConnection {
  /** Job rows, their state and the provider task bound to each. */
  readonly jobs = new JobsRepository(this);
  /** Results, written once per (provider, task ID). */
  readonly results = new ResultsRepository(this);
  /** Timelines, incidents and orphan findings. */
  readonly findings = new FindingsRepository(this);
  /** Poll state of the polling activity. */
  readonly polling = new PollingRepository(this);
  /** Submit reservations and the fair queue of each provider key. */
  readonly slots = new SlotsRepository(this);
  /** The adaptive limit of active jobs per provider key. */
  readonly limits = new ActiveLimitsRepository(this);
  /** Budgets, their usage per period and each account's policy. */
  readonly budgets = new BudgetsRepository(this);
  /** Cool-downs, release slots and refusals per provider key (the providers' shared state). */
  readonly providerKeys = new ProviderKeysRepository(this);
  /** Webhook deliveries and quarantine. */
  readonly webhooks = new WebhooksRepository(this);
  /** The HTTP API's idempotency records. */
  readonly apiIdempotency = new ApiIdempotencyRepository(this);

  /** The row of a new job (see {@link jobRow}): no I/O. */
  static readonly jobRow = jobRow;
  /** What a job row was built from (see {@link jobInput}): no I/O. */
  static readonly jobInput = jobInput;
}
