/**
 * The provider gateway: every call the activities make to a provider goes through
 * {@link callProvider}, which runs it under the provider key's shared limiter (cool-downs, quota
 * holds, release slots), beats while it is slow, and removes every configured secret from what the
 * provider answered or threw (a provider may echo a key in a message, a code or a URL) before
 * anything records it. The activity side (`activities/context.ts`) supplies what an attempt knows:
 * how long it may wait, who the caller is, how to heartbeat.
 */
import { redactProviderValue } from '../lib/sanitize.js';
import type { ProviderRegistry, ResolvedProvider } from './registry.js';
import { isProviderError, ProviderError } from './shared/errors.js';
import type { LimitedCall } from './shared/limiter.js';

/** How often a slow call beats, ms (a fast call sends none: heartbeats are billable Actions). */
export const SLOW_CALL_HEARTBEAT_MS = 2_000;

/** What a call through the gateway is given besides the provider and the work. */
export interface GatewayCall {
  /** Cool-down after a 429 that names no wait, ms. */
  coolDownMs: number;
  /** Longest wait for a cool-down or hold inside this call, ms (longer: a `cooldown` ProviderError carrying the wait). */
  maxWaitMs: number;
  /** The same on every attempt of one activity: a release slot it claimed earlier is honoured. */
  caller?: string;
  /** `submit` for calls that create work: they are also held by the key's quota hold. */
  phase?: 'submit';
  /** Told when the call waits for a cool-down or hold to end (ms, why). */
  onHeld?: (waitMs: number, why: string) => void | Promise<void>;
  /** The key's shared cool-down as the caller read it with the job's row just before (saves the limiter a read). */
  seen?: LimitedCall['seen'];
  /** Called every {@link SLOW_CALL_HEARTBEAT_MS} while the call is pending. */
  onSlow?: () => void;
}

/**
 * Runs `fn` against (provider, account) of `providers` under the key's limiter (see
 * {@link GatewayCall}); returns what it returned and throws what it threw, each with every secret
 * of `providers` removed. Throws a `cooldown` ProviderError when the key is held longer than
 * `maxWaitMs`, and whatever `providers.resolve` throws for an unknown provider or credential.
 */
export async function callProvider<T>(
  providers: ProviderRegistry,
  provider: string,
  account: string,
  fn: (r: ResolvedProvider) => Promise<T>,
  call: GatewayCall,
): Promise<T> {
  const resolved = providers.resolve(provider, account);
  const secrets = providers.allSecrets();
  try {
    return redactProviderValue(
      await resolved.limiter.run(
        () => whileSlow(fn(resolved), call.onSlow ?? (() => undefined)),
        call.coolDownMs,
        call.maxWaitMs,
        { phase: call.phase, caller: call.caller, onHeld: call.onHeld, seen: call.seen },
      ),
      secrets,
    );
  } catch (e) {
    throw isProviderError(e) ? redactProviderError(e, secrets) : e;
  }
}

/** A copy of provider error `e` whose message, code and evidence have every secret removed. */
export function redactProviderError(e: ProviderError, secrets: readonly string[]): ProviderError {
  const details = redactProviderValue(
    { ...e.details, evidence: e.details.evidence ? { ...e.details.evidence } : undefined },
    secrets,
  );
  return new ProviderError(e.kind, redactProviderValue(e.message, secrets), details);
}

/** Awaits `work`, calling `beat` every {@link SLOW_CALL_HEARTBEAT_MS} while it is still pending. */
export async function whileSlow<T>(work: Promise<T>, beat: () => void): Promise<T> {
  const timer = setInterval(beat, SLOW_CALL_HEARTBEAT_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
