/**
 * The worker's providers: one adapter per configured provider, the credentials of each
 * (provider, account) pair, and one shared limiter per provider key.
 *
 * The limiter is shared by every activity of the worker process: it bounds concurrent calls and
 * spacing per provider key (p-queue), and holds a cool-down after any `429`/concurrency answer so
 * that no other workflow calls that key until the provider's `Retry-After` has passed. This is
 * what keeps a thousand waiting jobs from producing a 429 storm (providers.md: Bright Data blocks
 * an IP after 25 × 429 in 5 min, so throttling must be per provider account, not per workflow).
 */
import { createHash } from 'node:crypto';
import PQueue from 'p-queue';
import type { Config, ProviderEntry } from '../config.js';
import { configuredCredentialValues, resolveCredential } from './credentials.js';
import { descriptorOf, webhookSigned } from './descriptors.js';
import { DEFAULT_SETTLE_MS, resultLimitsOf, settleMsOf } from './entry.js';
import { ProviderError } from './errors.js';
import type { ProviderAdapter, ResultLimits } from './types.js';
import { webhookCallback } from './webhook.js';

export { DEFAULT_SETTLE_MS };

/**
 * Cool-downs shared across worker processes (the result store implements it), so that a 429 seen
 * by one worker holds back every worker using the same provider key. Times are epoch ms.
 */
export interface SharedCooldowns {
  getCooldown(label: string): Promise<number>;
  setCooldown(label: string, untilMs: number, reason: string): Promise<void>;
}

/** Per-provider-key limiter: concurrency + spacing + cool-down gate. Times in ms. */
export class KeyLimiter {
  private readonly queue: PQueue;
  /** Epoch ms until which calls are held back. */
  private coolUntil = 0;
  private coolReason = '';
  private sharedCheckedAt = 0;

  constructor(
    readonly label: string,
    opts: { maxConcurrent: number; minIntervalMs: number },
    private readonly now: () => number = Date.now,
    private readonly shared?: SharedCooldowns,
    /** How often the shared cool-down is re-read, ms. */
    private readonly sharedRefreshMs = 500,
  ) {
    this.queue = new PQueue(
      opts.minIntervalMs > 0 ? { concurrency: opts.maxConcurrent, intervalCap: 1, interval: opts.minIntervalMs } : { concurrency: opts.maxConcurrent },
    );
  }

  /** Remaining cool-down in ms (0 when none). */
  coolDownRemainingMs(): number {
    return Math.max(0, this.coolUntil - this.now());
  }

  /** Starts or extends a cool-down of `ms` (never shortens one already running), here and in the shared store. */
  coolDown(ms: number, reason: string): void {
    const until = this.now() + ms;
    if (until > this.coolUntil) {
      this.coolUntil = until;
      this.coolReason = reason;
    }
    this.shared?.setCooldown(this.label, until, reason).catch(() => undefined); // best effort: the local gate still holds
  }

  private async refreshShared(): Promise<void> {
    if (!this.shared || this.now() - this.sharedCheckedAt < this.sharedRefreshMs) return;
    this.sharedCheckedAt = this.now();
    try {
      const until = await this.shared.getCooldown(this.label);
      if (until > this.coolUntil) {
        this.coolUntil = until;
        this.coolReason = 'cool-down set by another worker';
      }
    } catch {
      // The store being unavailable must not stop provider calls; the local gate still applies.
    }
  }

  /**
   * Runs `fn` under the limiter. During a cool-down it does not call the provider: a cool-down
   * with at most `maxWaitMs` left is waited out here (a wait is not a failed attempt); a longer one
   * throws a `cooldown` {@link ProviderError} whose `retryAfterMs` is the time left, so that the
   * activity is retried after it instead of holding a slot. A `cooldown` error thrown by `fn`
   * starts a cool-down for every caller of this key.
   */
  async run<T>(fn: () => Promise<T>, defaultCoolDownMs: number, maxWaitMs = 0): Promise<T> {
    await this.refreshShared();
    for (let waits = 0; waits < 5; waits++) {
      const left = this.coolDownRemainingMs();
      if (left <= 0 || left > maxWaitMs) break;
      await new Promise((r) => setTimeout(r, left));
      await this.refreshShared();
    }
    const gate = () => {
      const left = this.coolDownRemainingMs();
      if (left > 0) {
        throw new ProviderError('cooldown', `provider key ${this.label} is cooling down for ${left} ms (${this.coolReason})`, {
          code: 'LOCAL_COOLDOWN',
          retryAfterMs: left,
        });
      }
    };
    gate();
    return this.queue.add(
      async () => {
        gate();
        try {
          return await fn();
        } catch (e) {
          // A concurrency refusal limits submits only (the adaptive active-jobs limit handles it),
          // unless the provider counts it like a rate limit (`keyWide`); rate limits hold back
          // every call of the key.
          if (e instanceof ProviderError && e.kind === 'cooldown' && (!isConcurrencyRefusal(e) || e.details.keyWide === true)) {
            this.coolDown(e.details.retryAfterMs ?? defaultCoolDownMs, e.details.code ?? 'rate limited');
          }
          throw e;
        }
      },
      { throwOnTimeout: true },
    ) as Promise<T>;
  }
}

/** Provider codes meaning "too many of your jobs are active; try later" (seeds' `CONCURRENCY_LIMIT`, Apify's `concurrent-runs-limit-exceeded`). */
const CONCURRENCY_REFUSAL = /^(CONCURRENCY_LIMIT|concurrent-runs-limit-exceeded|too-many-concurrent-runs)$/i;

/** True for a refusal because of the account's concurrent-job limit (not a request-rate limit). */
export function isConcurrencyRefusal(e: ProviderError): boolean {
  return e.kind === 'cooldown' && e.details.code !== undefined && CONCURRENCY_REFUSAL.test(e.details.code);
}

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
  /** Bounds of one result read for this provider (entry `results`, else {@link DEFAULT_RESULT_LIMITS}). */
  resultLimits: ResultLimits;
  /**
   * How long after a submit a list read may still miss the job (search-backed lists lag), ms:
   * absence is proven only by a list read at least this long after the last submit attempt, and a
   * second read (issue 13). Entry `reconcile.settleMs`, default {@link DEFAULT_SETTLE_MS}.
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
export function providerIdentity(entry: { kind: string; baseUrl?: unknown }, adapter: Pick<ProviderAdapter, 'evidence'>, apiKey: string): { providerKey: string; providerAccount: string } {
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

/**
 * Builds the adapter for a configured provider entry through its kind's descriptor
 * (`descriptors.ts`). Throws for an unknown kind.
 */
export function createAdapter(name: string, entry: ProviderEntry): ProviderAdapter {
  return descriptorOf(entry.kind).create(name, entry);
}

/** All configured providers of a worker (or of the CLI/API, which only need capabilities). */
export class ProviderRegistry {
  private readonly adapters = new Map<string, ProviderAdapter>();
  private readonly limiters = new Map<string, KeyLimiter>();

  /**
   * @param adapters adapter overrides by provider name (unit tests give fakes here; the product
   *   never does).
   */
  constructor(
    private readonly config: Config,
    private readonly env: NodeJS.ProcessEnv = process.env,
    adapters: Record<string, ProviderAdapter> = {},
    /** Cool-downs shared with other workers (the store); none: per process only. */
    private readonly shared?: SharedCooldowns,
  ) {
    for (const [name, entry] of Object.entries(config.providers)) this.adapters.set(name, adapters[name] ?? createAdapter(name, entry));
  }

  /** Configured provider names. */
  names(): string[] {
    return [...this.adapters.keys()];
  }

  /** The adapter for `name`; throws a permanent {@link ProviderError} when not configured. */
  adapter(name: string): ProviderAdapter {
    const a = this.adapters.get(name);
    if (!a) throw new ProviderError('permanent', `provider "${name}" is not configured on this worker (configured: ${this.names().join(', ') || 'none'})`, { code: 'UNKNOWN_PROVIDER' });
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
      cred = resolveCredential(entry, name, account, this.env);
    } catch (e) {
      throw new ProviderError('permanent', (e as Error).message, { code: 'NO_CREDENTIALS' });
    }
    const { providerKey, providerAccount } = providerIdentity(entry, adapter, cred.apiKey);
    let limiter = this.limiters.get(providerKey);
    if (!limiter) {
      limiter = new KeyLimiter(providerKey, entry.limits, Date.now, this.shared);
      this.limiters.set(providerKey, limiter);
    }
    const env = this.env;
    return {
      adapter,
      apiKey: cred.apiKey,
      providerKey,
      providerAccount,
      limiter,
      entry,
      resultLimits: resultLimitsOf(entry),
      settleMs: settleMsOf(entry),
      callback: (jobId) => webhookCallback(name, entry.webhook, webhookSigned(entry) ?? true, jobId, env),
    };
  }

  /** Accounts that have their own credential for provider `name` (the rest share its default key). */
  accountsWithOwnKey(name: string): string[] {
    return Object.keys(this.config.providers[name]?.credentials.accounts ?? {});
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
