/**
 * The worker's providers: one adapter per configured provider entry (built by its kind's
 * descriptor), the credential of each (provider, account) pair, and one shared
 * {@link KeyLimiter} per provider key (`shared/limiter.ts`). Keeping limits per provider key, not
 * per workflow, is what keeps a thousand waiting jobs from producing a 429 storm: Bright Data,
 * for one, blocks an IP after 25 × 429 in 5 minutes.
 *
 * The registry reads only its part of the configuration ({@link ProvidersConfig}) and is handed
 * the state it shares with other workers ({@link ProviderSharedState}, which the store
 * implements): it imports neither the configuration module nor the store.
 */
import { createHash } from 'node:crypto';
import { configuredCredentialValues, resolveCredential } from './shared/credentials.js';
import {
  costOf,
  descriptorOf,
  needsCredential,
  webhookSigned,
  type ProviderEntry,
  type ProvidersConfig,
} from './kinds.js';
import type { EntryCost } from './shared/cost.js';
import { resultLimitsOf, settleMsOf } from './shared/entry.js';
import { ProviderError } from './shared/errors.js';
import { KeyLimiter } from './shared/limiter.js';
import type { ProviderSharedState, SharesState } from './shared/sharedState.js';
import type { ProviderAdapter, ResultLimits } from './adapter.js';
import { webhookCallback } from './shared/webhook.js';

/** What an activity needs to call a provider for an account. */
export interface ResolvedProvider {
  adapter: ProviderAdapter;
  apiKey: string;
  /**
   * The provider key: kind, API host and a fingerprint of the credential
   * (`firecrawl@api.firecrawl.dev#3f9a0c1d2e4b5a69`). Every entry that reaches the same provider
   * with the same credential shares it: its limiter, cool-downs and adaptive active-jobs limit
   * are kept per key, the way the provider counts them.
   */
  providerKey: string;
  /**
   * The provider account the task IDs live in: the provider key, or `<kind>@<host>` for kinds
   * whose status reads need no credential (any entry on that host can read any task). A task is
   * bound to one job per provider account.
   */
  providerAccount: string;
  limiter: KeyLimiter;
  entry: ProviderEntry;
  /** What a job of this entry costs: its kind's unit and estimate (docs/budgets.md). */
  cost: EntryCost;
  /** Whether the key's slots are shared between accounts by weight (entry `limits.fairShares`, default true). */
  fairShares: boolean;
  /** Bounds of one result read for this provider (entry `results`, else {@link DEFAULT_RESULT_LIMITS}). */
  resultLimits: ResultLimits;
  /** How long after its creation a task's reads may answer `404` before the provider shows it, ms (entry `notFoundGraceMs`, else the kind's declaration). */
  notFoundGraceMs: number;
  /**
   * How long after a submit a list read may still miss the job (search-backed lists lag), ms:
   * absence is proven only by a list read at least this long after the last submit attempt, and a
   * second read. Entry `reconcile.settleMs`, default `DEFAULT_SETTLE_MS` (`shared/entry.ts`).
   */
  settleMs: number;
  /**
   * The callback of one job when the entry configures a webhook: our receiver URL (with the
   * per-job token for providers that do not sign) and the signing secret read from the worker's
   * environment now. Empty when the entry has no webhook. Throws a permanent ProviderError when
   * the configured secret variable is unset.
   */
  callback(jobId: string): { callbackUrl?: string; webhookSecret?: string };
}

/**
 * The provider key and account of an entry used with credential `apiKey` (see
 * {@link ResolvedProvider.providerKey}): the credential appears only as the first 16 hex digits of
 * its SHA-256, never as itself.
 */
export function providerIdentity(
  entry: { kind: string; baseUrl?: unknown },
  adapter: Pick<ProviderAdapter, 'evidence'>,
  apiKey: string,
): { providerKey: string; providerAccount: string } {
  let host = 'unknown-host';
  try {
    if (typeof entry.baseUrl === 'string') host = new URL(entry.baseUrl).host.toLowerCase();
  } catch {
    // an unparsable base URL is refused by the configuration schema; keep a stable label anyway
  }
  const base = `${entry.kind}@${host}`;
  const providerKey = `${base}#${createHash('sha256').update(apiKey, 'utf8').digest('hex').slice(0, 16)}`;
  return { providerKey, providerAccount: adapter.evidence?.taskScope === 'host' ? base : providerKey };
}

/** True when `adapter` implements {@link SharesState}. */
function sharesState(adapter: ProviderAdapter): adapter is ProviderAdapter & SharesState {
  return typeof (adapter as Partial<SharesState>).shareState === 'function';
}

/**
 * Builds the adapter for a configured provider entry through its kind's descriptor
 * (listed in `kinds.ts`). Throws for an unknown kind.
 */
export function createAdapter(name: string, entry: ProviderEntry): ProviderAdapter {
  return descriptorOf(entry.kind).create(name, entry);
}

/** How many (provider, account) resolutions a registry keeps (all are dropped past it, and made again as needed). */
const MAX_RESOLVED = 10_000;

/** All configured providers of a worker (or of the CLI/API, which only need capabilities). */
export class ProviderRegistry {
  private readonly adapters = new Map<string, ProviderAdapter>();
  private readonly limiters = new Map<string, KeyLimiter>();
  /** What {@link resolve} made for (provider, account), kept while the credential it read stays the same. */
  private readonly resolved = new Map<string, ResolvedProvider>();

  /**
   * @param adapters adapter overrides by provider name (unit tests give fakes here; the product
   *   never does).
   */
  constructor(
    private readonly config: ProvidersConfig,
    private readonly env: NodeJS.ProcessEnv = process.env,
    adapters: Record<string, ProviderAdapter> = {},
    /**
     * State shared with other workers (the store): cool-downs and release slots, and the refusals
     * a provider counts toward blocking the caller (Bright Data's IP block); none: per process only.
     */
    private readonly shared?: ProviderSharedState,
  ) {
    for (const [name, entry] of Object.entries(config.providers)) {
      const adapter = adapters[name] ?? createAdapter(name, entry);
      if (shared && sharesState(adapter)) adapter.shareState(shared);
      this.adapters.set(name, adapter);
    }
  }

  /** Configured provider names. */
  names(): string[] {
    return [...this.adapters.keys()];
  }

  /** The adapter for `name`; throws a permanent {@link ProviderError} when not configured. */
  adapter(name: string): ProviderAdapter {
    const a = this.adapters.get(name);
    if (!a)
      throw new ProviderError(
        'permanent',
        `provider "${name}" is not configured on this worker (configured: ${this.names().join(', ') || 'none'})`,
        {
          code: 'UNKNOWN_PROVIDER',
        },
      );
    return a;
  }

  /**
   * Adapter, API key and shared limiter for (provider, account). Throws a permanent
   * {@link ProviderError} when the provider or its credentials are not configured.
   */
  resolve(name: string, account: string): ResolvedProvider {
    const adapter = this.adapter(name);
    const entry = this.config.providers[name]!;
    let cred: { apiKey: string; label: string };
    try {
      // An entry whose calls send no credential (`auth: none`) reaches its provider with none.
      cred = needsCredential(entry) ? resolveCredential(entry, name, account, this.env) : { apiKey: '', label: name };
    } catch (e) {
      throw new ProviderError('permanent', (e as Error).message, { code: 'NO_CREDENTIALS' });
    }
    // Every provider call resolves its entry: what follows from the entry and the credential
    // (the key's hash, its limiter, the entry's limits) is made once per credential read.
    const memo = `${name}\u0000${account}`;
    const known = this.resolved.get(memo);
    if (known?.apiKey === cred.apiKey) return known;
    const { providerKey, providerAccount } = providerIdentity(entry, adapter, cred.apiKey);
    let limiter = this.limiters.get(providerKey);
    if (!limiter) {
      // Entries on one credential share the limiter of the first one resolved (its spacing and quota hold).
      limiter = new KeyLimiter(providerKey, entry.limits, { shared: this.shared });
      this.limiters.set(providerKey, limiter);
    }
    const env = this.env;
    const out: ResolvedProvider = {
      adapter,
      apiKey: cred.apiKey,
      providerKey,
      providerAccount,
      limiter,
      entry,
      cost: costOf(entry),
      fairShares: entry.limits.fairShares,
      resultLimits: resultLimitsOf(entry),
      notFoundGraceMs: entry.notFoundGraceMs ?? descriptorOf(entry.kind).notFoundGrace.ms,
      settleMs: settleMsOf(entry),
      callback: (jobId) => webhookCallback(name, entry.webhook, webhookSigned(entry) ?? true, jobId, env),
    };
    if (this.resolved.size >= MAX_RESOLVED) this.resolved.clear();
    this.resolved.set(memo, out);
    return out;
  }

  /** Accounts that have their own credential for provider `name` (the rest share its default key). */
  accountsWithOwnKey(name: string): string[] {
    return Object.keys(this.config.providers[name]?.credentials?.accounts ?? {});
  }

  /**
   * Every secret value the worker knows, to scrub from anything recorded: each configured
   * credential (with the forms of `credentialSecrets`: a Basic pair's password and Base64) and
   * each webhook secret that is set in the environment.
   */
  allSecrets(): string[] {
    const out = new Set<string>();
    for (const entry of Object.values(this.config.providers)) {
      for (const v of configuredCredentialValues(entry, this.env)) out.add(v);
      const hook = entry.webhook ? this.env[entry.webhook.secretEnv] : undefined;
      if (hook) out.add(hook);
    }
    for (const { secretEnv } of Object.values(this.config.api?.webhookSecrets ?? {})) {
      const v = this.env[secretEnv];
      if (v) out.add(v);
    }
    return [...out];
  }
}
