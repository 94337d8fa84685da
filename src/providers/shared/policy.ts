/**
 * A provider's poll defaults, for the client's `pollDefaults` option: the provider kind's (its
 * descriptor's `poll`: e.g. an actor run takes minutes, so its first check comes later), then the
 * provider entry's `poll` (configuration) — the later wins field by field. The client lays them over
 * `DEFAULT_POLL_POLICY` and under the job's own `policy` (`pollPolicyOf` in `src/model/policy.ts`).
 */
import { definedOnly, pollPolicyOf } from '../../model/policy.js';
import type { PollPolicy } from '../../model/types.js';
import { findDescriptor, type ProvidersConfig } from '../kinds.js';

/**
 * The poll defaults of `providerName` (durations in ms); empty for an unknown provider or no
 * configuration.
 */
export function providerPollDefaults(
  config: Pick<ProvidersConfig, 'providers'> | undefined,
  providerName: string,
): Partial<PollPolicy> {
  const entry = config?.providers[providerName];
  const kindDefaults = entry ? findDescriptor(entry.kind)?.poll : undefined;
  return { ...definedOnly(kindDefaults), ...definedOnly(entry?.poll) };
}

/**
 * The complete policy of a job on `providerName` (all durations in ms): the defaults, then
 * {@link providerPollDefaults}, then the job's policy (`pollPolicyOf`). An unknown provider (or no
 * configuration) contributes nothing.
 */
export function effectivePolicy(
  config: Pick<ProvidersConfig, 'providers'> | undefined,
  providerName: string,
  jobPolicy: Partial<PollPolicy> | undefined,
): PollPolicy {
  return pollPolicyOf(providerPollDefaults(config, providerName), jobPolicy);
}
