/**
 * The poll policy a job runs with: {@link DEFAULT_POLL_POLICY}, then the provider kind's defaults
 * (its descriptor's `poll`: e.g. an actor run takes minutes, so its first check comes later), then
 * the provider entry's `poll` (configuration), then the job's own `policy` — later ones win field by
 * field. Computed by the client when it builds the workflow input, so the workflow (and its
 * history) carries the complete policy and never reads configuration.
 */
import { DEFAULT_POLL_POLICY, type PollPolicy } from '../../model/types.js';
import { findDescriptor, type ProvidersConfig } from '../kinds.js';

/**
 * The effective {@link PollPolicy} of a job on `providerName` (all durations in ms). An unknown
 * provider (or no configuration) contributes nothing: the defaults under the job's policy.
 */
export function effectivePolicy(
  config: Pick<ProvidersConfig, 'providers'> | undefined,
  providerName: string,
  jobPolicy: Partial<PollPolicy> | undefined,
): PollPolicy {
  const entry = config?.providers[providerName];
  const kindDefaults = entry ? findDescriptor(entry.kind)?.poll : undefined;
  return {
    ...DEFAULT_POLL_POLICY,
    ...definedOnly(kindDefaults),
    ...definedOnly(entry?.poll),
    ...definedOnly(jobPolicy),
  };
}

function definedOnly<T extends object>(o: T | undefined): Partial<T> {
  if (!o) return {};
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
