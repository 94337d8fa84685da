/**
 * The baseline of the throughput benchmark: a plain in-process `async` poll loop, no Temporal, over
 * the same provider (the real `ReferenceAdapter` behind the real shared `KeyLimiter`, from the same
 * `ProviderRegistry` the worker builds), with the same poll schedule (the workflow's `nextDelay`:
 * growing, jittered) and the same result-store writes, call for call:
 *
 * | product (client, workflow activities)          | baseline                                      |
 * |-------------------------------------------------|-----------------------------------------------|
 * | `ScrapeClient.startScrape`: `store.insertJob`     | `store.insertJob` (same row)                   |
 * | `registerJob`: `store.registerJob`, `appendEvent` | the same two calls                             |
 * | `submitScrape`: `recordSubmitIntent`, submit, `recordTaskId` | the same three calls            |
 * | timer, then `checkStatus`: status GET, `recordStatusCheck` | `setTimeout`, the same two calls   |
 * | `saveResult`: result GET, `writeResultOnce`      | the same two calls                             |
 *
 * What it does not have is what Temporal adds: durability of the loop itself (a crash loses every
 * job in flight), history, visibility, cancellation, retries of failed calls.
 */
import { DEFAULT_RESULT_LIMITS } from '../../src/providers/types.js';
import { fingerprint } from '../../src/lib/hash.js';
import { providerKeys } from '../../src/activities/index.js';
import { jobIdFor } from '../../src/client/index.js';
import type { Config } from '../../src/config.js';
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../../src/model/types.js';
import type { ProviderRegistry } from '../../src/providers/registry.js';
import { Store } from '../../src/store/index.js';

/** One baseline job. */
export interface BaselineJob {
  account: string;
  key: string;
  url: string;
}

/** Dependencies of {@link runBaselineJob}. */
export interface BaselineDeps {
  store: Store;
  providers: ProviderRegistry;
  config: Config;
  provider: string;
  policy: Partial<PollPolicy>;
  /** Called when the result transaction committed (epoch ms). */
  onWritten?: (jobId: string, at: number) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Inserts the job row (the "start"), then returns the promise of the rest of the job: submit,
 * poll on the workflow's schedule, read and write the result once. Resolves with the final state.
 */
export async function startBaselineJob(deps: BaselineDeps, job: BaselineJob): Promise<{ jobId: string; done: Promise<string> }> {
  const { store, providers, provider } = deps;
  const policy: PollPolicy = { ...DEFAULT_POLL_POLICY, ...deps.policy };
  const request = { url: job.url, format: 'markdown' as const, options: {} };
  const requestHash = fingerprint({ provider, request });
  const jobId = jobIdFor(job.account, job.key);
  // ScrapeClient.startScrape
  await store.insertJob(Store.jobRow({ jobId, account: job.account, key: job.key, provider, requestHash, request, policy: deps.policy, workflowId: jobId }));
  const run = async (): Promise<string> => {
    const secrets = providers.allSecrets();
    const deadlineAt = new Date(Date.now() + policy.deadlineMs).toISOString();
    // registerJob activity
    const row = await store.registerJob(Store.jobRow({ jobId, account: job.account, key: job.key, provider, requestHash, request, policy: deps.policy, workflowId: jobId, deadlineAt }, secrets));
    await store.appendEvent(jobId, 'registered', row.state, { workflowId: jobId, url: job.url });
    // submitScrape activity
    const r = providers.resolve(provider, job.account);
    await store.recordSubmitIntent(jobId);
    const accepted = await r.limiter.run(() => r.adapter.submit(request, { apiKey: r.apiKey, secrets, ...providerKeys(job.account, job.key) }), 5_000, 0);
    const taskId = await store.recordTaskId(jobId, accepted.taskId, accepted.providerStatus, 'submit');
    // durable timers + checkStatus activities, same schedule as the workflow's nextDelay()
    for (let index = 0; ; index++) {
      const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * Math.pow(policy.multiplier, index));
      await sleep(Math.max(1, Math.round(base * (1 - policy.jitter + 2 * policy.jitter * Math.random()))));
      const obs = await r.limiter.run(() => r.adapter.status(taskId, { apiKey: r.apiKey, secrets }), 5_000, 0);
      await store.recordStatusCheck(jobId, obs.providerStatus);
      if (obs.state === 'completed') break;
      if (obs.state === 'failed' || obs.state === 'cancelled') {
        await store.transition(jobId, obs.state);
        return obs.state;
      }
    }
    // saveResult activity
    const payload = await r.limiter.run(() => r.adapter.result(taskId, { apiKey: r.apiKey, secrets, url: job.url, request, limits: DEFAULT_RESULT_LIMITS }), 5_000, 0);
    await store.writeResultOnce(jobId, provider, taskId, payload, deps.config.resultRetentionMs);
    deps.onWritten?.(jobId, Date.now());
    return 'completed';
  };
  return { jobId, done: run() };
}
