/**
 * The poll policy a job runs with, field by field: {@link DEFAULT_POLL_POLICY}, then the provider's
 * defaults (its kind's, then its configuration entry's `poll`: `providerPollDefaults` in
 * `src/providers/shared/policy.ts`), then the job's own `policy`; later ones win, an `undefined`
 * field never overrides. The client computes it when it builds the workflow input, so the workflow
 * (and its history) carries the complete policy and never reads configuration.
 */
import { DEFAULT_POLL_POLICY, type PollPolicy } from './types.js';

/** The complete {@link PollPolicy} (durations in ms) from the provider's defaults and the job's own policy, either absent. */
export function pollPolicyOf(
  providerDefaults: Partial<PollPolicy> | undefined,
  jobPolicy: Partial<PollPolicy> | undefined,
): PollPolicy {
  return { ...DEFAULT_POLL_POLICY, ...definedOnly(providerDefaults), ...definedOnly(jobPolicy) };
}

/** The fields of `o` that are not `undefined` (a layer of the policy; empty for no `o`). */
export function definedOnly<T extends object>(o: T | undefined): Partial<T> {
  if (!o) return {};
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
