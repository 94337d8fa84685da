/**
 * Limits shared the way providers count them, with a fake clock: Bright Data's IP-block window kept
 * in the store (two guards over one store see each other's refusals; a guard made after a restart
 * holds calls back; old rows pruned), the release queue after a cool-down (a probe first, the rest
 * one at a time; a probe that meets a new 429 holds the rest; callers sent away keep their slot),
 * cool-downs keyed by the provider key (two entries on one credential share them, across workers
 * too), the quota hold of a key's submits, and the classification of quota answers.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { toFailure } from '../../src/activities/failures.js';
import { parseConfig } from '../../src/config.js';
import {
  BrightDataAdapter,
  RefusalGuard,
  RefusalWindow,
  brightDataProvider,
} from '../../src/providers/brightdata/index.js';
import {
  isProviderError,
  isQuotaExhausted,
  ProviderError,
  QUOTA_EXHAUSTED,
  quotaExhausted,
  saysQuotaExhausted,
} from '../../src/providers/shared/errors.js';
import { httpError, type ProviderResponse } from '../../src/providers/shared/http.js';
import { KeyLimiter, RELEASE_MIN_SPACING_MS, RELEASE_SPACING_FLOOR_MS } from '../../src/providers/shared/limiter.js';
import { ProviderRegistry } from '../../src/providers/registry.js';
import { scraperApiError } from '../../src/providers/scraperapi/adapter.js';
import { openStore, type Store } from '../../src/store/index.js';

const T0 = Date.parse('2026-12-01T10:00:00.000Z');

describe('the Bright Data IP-block window kept in the store', () => {
  let store: Store;
  let now = T0;
  const clock = () => now;
  const scope = 'brightdata@api.brightdata.com';
  const guard = (threshold = 3) =>
    new RefusalGuard(scope, new RefusalWindow(300_000, threshold, clock), store.providerKeys, clock);

  beforeEach(async () => {
    store = await openStore('sqlite::memory:');
    now = T0;
  });
  afterEach(async () => store.close());

  it('two guards over one store (two workers behind one IP) see each other’s refusals; the third holds both', async () => {
    const a = guard();
    const b = guard();
    expect(await a.record()).toBe(1);
    now += 1_000;
    expect(await b.record()).toBe(2);
    expect([await a.count(), await b.count()]).toEqual([2, 2]);
    expect(await b.heldForMs()).toBe(0);
    now += 1_000;
    expect(await a.record()).toBe(3);
    // b saw one 429 itself, yet it holds every call until the oldest stored one leaves the window.
    expect(await b.heldForMs()).toBe(T0 + 300_000 - now);
    expect(await a.heldForMs()).toBe(T0 + 300_000 - now);
  });

  it('a guard made after a restart (empty memory) holds calls back from the stored refusals, until they leave the window', async () => {
    const before = guard();
    for (let i = 0; i < 3; i++) {
      await before.record();
      now += 10_000;
    }
    const restarted = guard();
    expect(restarted.local.count()).toBe(0);
    expect(await restarted.heldForMs()).toBe(T0 + 300_000 - now);
    now = T0 + 300_001; // the oldest left the window: two remain
    expect([await restarted.count(), await restarted.heldForMs()]).toEqual([2, 0]);
  });

  it('rows older than the longest configurable window are pruned when a refusal is recorded; other scopes are kept', async () => {
    const g = guard();
    await g.record();
    await new RefusalGuard(
      'brightdata@other.example',
      new RefusalWindow(300_000, 3, clock),
      store.providerKeys,
      clock,
    ).record();
    now += 2 * 3_600_000;
    await g.record();
    expect(await store.providerKeys.refusalsSince(scope, 0)).toEqual([now]);
    expect(await store.providerKeys.refusalsSince('brightdata@other.example', 0)).toHaveLength(1);
  });

  it('while the store cannot be read, the process’s own window still guards', async () => {
    const broken = {
      recordRefusal: async () => Promise.reject(new Error('store down')),
      refusalsSince: async () => Promise.reject(new Error('store down')),
    };
    const g = new RefusalGuard(scope, new RefusalWindow(300_000, 2, clock), broken, clock);
    expect(await g.record()).toBe(1);
    expect(await g.record()).toBe(2);
    expect(await g.heldForMs()).toBe(300_000);
  });

  it('a Bright Data adapter made after a restart refuses to call while the store holds maxRefusals 429s for its host: nothing is sent', async () => {
    now = Date.now();
    const host = '127.0.0.1:9'; // nothing listens: a call that left would fail as a network error, not as the guard
    for (let i = 0; i < 4; i++)
      await store.providerKeys.recordRefusal(`brightdata@${host}`, now - 60_000 + i, now - 3_600_000);
    const entry = brightDataProvider.entrySchema.parse({
      kind: 'brightdata',
      baseUrl: `http://${host}`,
      datasetId: 'gd_x',
      credentials: {},
      rateLimit: { maxRefusals: 4 },
      limits: { maxConcurrent: 2 },
    });
    const adapter = new BrightDataAdapter('bd', entry);
    adapter.shareState(store.providerKeys);
    const err = await adapter.status('s_1', { apiKey: 'k', secrets: [] }).catch((e: unknown) => e);
    expect(isProviderError(err) && err.kind === 'cooldown' && err.details.code === 'IP_BLOCK_GUARD').toBe(true);
    const e = err as ProviderError;
    expect(e.details.retryAfterMs).toBeGreaterThan(230_000);
    expect(e.details.retryAfterMs).toBeLessThanOrEqual(240_000);
    expect(e.message).toContain(`4 × 429 were recorded for brightdata@${host}`);
  });
});

describe('release slots after a cool-down (fake clock)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  /** Runs `n` callers through `limiter` at once; each call records its time, or answers with `answer(i)`. */
  function callers(
    limiter: KeyLimiter,
    n: number,
    opts: { maxWaitMs?: number; phase?: 'submit' | 'read'; answer?: (i: number) => Promise<string> } = {},
  ) {
    const at: { i: number; t: number }[] = [];
    const outcomes = Array.from({ length: n }, (_, i) =>
      limiter
        .run(
          async () => {
            at.push({ i, t: Date.now() - T0 });
            return opts.answer ? opts.answer(i) : 'ok';
          },
          5_000,
          opts.maxWaitMs ?? 60_000,
          { caller: `job-${i}`, phase: opts.phase },
        )
        .then(
          (v) => ({ ok: v }),
          (e: unknown) => ({ error: e as ProviderError }),
        ),
    );
    return { at, outcomes: Promise.all(outcomes) };
  }

  it('the first caller after the cool-down goes alone (the probe) 500 ms before the next; the others one at a time, the spacing halving every second, never all at once', async () => {
    const limiter = new KeyLimiter('k', { maxConcurrent: 8, minIntervalMs: 0 }, { random: () => 0 });
    await limiter.coolDown(1_000, 'rate limited');
    const { at, outcomes } = callers(limiter, 5);
    await vi.advanceTimersByTimeAsync(999);
    expect(at).toEqual([]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect((await outcomes).every((o) => 'ok' in o)).toBe(true);
    // 500 ms after the probe, then 500 × 2^(−t/1 s) ms apart (t: time since the cool-down ended).
    expect(at.map((c) => c.t)).toEqual([1_000, 1_500, 1_854, 2_131, 2_359]);
  });

  it('a queue of 3,000 held calls drains in a small fraction of a fixed spacing’s time (a slow start), never two in the same millisecond', async () => {
    // 3,000: past the ~2,500th slot, where the halving spacing would round to 0 without its floor.
    const limiter = new KeyLimiter('k', { maxConcurrent: 3_000, minIntervalMs: 0 }, { random: () => 0 });
    await limiter.coolDown(1_000, 'rate limited');
    const { at, outcomes } = callers(limiter, 3_000, { maxWaitMs: 120_000 });
    await vi.advanceTimersByTimeAsync(120_000);
    expect((await outcomes).every((o) => 'ok' in o)).toBe(true);
    const times = at.map((c) => c.t).sort((a, b) => a - b);
    expect(times[0]).toBe(1_000);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(500); // the probe’s answer is seen first
    for (let k = 1; k < times.length; k++)
      expect(times[k]! - times[k - 1]!).toBeGreaterThanOrEqual(RELEASE_MIN_SPACING_MS);
    // At a fixed 500 ms spacing the last would leave 1,500 s after the end.
    expect(times.at(-1)! - 1_000).toBeLessThan(60_000);
  });

  it('the spacing is jittered upward only, and never below the entry’s minIntervalMs', async () => {
    const limiter = new KeyLimiter('k', { maxConcurrent: 8, minIntervalMs: 800 }, { random: () => 0.999 });
    await limiter.coolDown(1_000, 'rate limited');
    const { at, outcomes } = callers(limiter, 4);
    await vi.advanceTimersByTimeAsync(20_000);
    await outcomes;
    const gaps = at.slice(1).map((c, k) => c.t - at[k]!.t);
    expect(at[0]!.t).toBe(1_000);
    for (const g of gaps) {
      expect(g).toBeGreaterThanOrEqual(800);
      expect(g).toBeLessThanOrEqual(1_200);
    }
    expect(RELEASE_SPACING_FLOOR_MS).toBeGreaterThanOrEqual(250);
  });

  it('a probe that meets a new 429 holds the rest: each re-reads the cool-down before calling and takes a slot after the new one', async () => {
    const limiter = new KeyLimiter('k', { maxConcurrent: 8, minIntervalMs: 0 }, { random: () => 0 });
    await limiter.coolDown(1_000, 'rate limited');
    const refuse = (i: number) =>
      i === 0
        ? Promise.reject(
            new ProviderError('cooldown', '429 again', { code: 'RATE_LIMITED', httpStatus: 429, retryAfterMs: 2_000 }),
          )
        : Promise.resolve('ok');
    const { at, outcomes } = callers(limiter, 4, { answer: refuse });
    await vi.advanceTimersByTimeAsync(20_000);
    const out = await outcomes;
    expect(at.map((c) => c.t)).toEqual([1_000, 3_000, 3_500, 3_854]);
    expect(at[0]!.i).toBe(0);
    expect('error' in out[0]! && out[0].error.details.code).toBe('RATE_LIMITED');
  });

  it('callers whose slot is beyond their in-attempt wait are sent away with the time to their slot, and that slot is honoured when they come back; a newcomer queues behind them', async () => {
    const limiter = new KeyLimiter('k', { maxConcurrent: 8, minIntervalMs: 0 }, { random: () => 0 });
    await limiter.coolDown(1_000, 'rate limited');
    const first = await callers(limiter, 3, { maxWaitMs: 0 }).outcomes;
    expect(first.map((o) => ('error' in o ? [o.error.details.code, o.error.details.retryAfterMs] : o))).toEqual([
      ['LOCAL_COOLDOWN', 1_000],
      ['LOCAL_COOLDOWN', 1_500],
      ['LOCAL_COOLDOWN', 1_854],
    ]);
    await vi.advanceTimersByTimeAsync(1_000);
    const newcomer = await limiter
      .run(async () => 'ok', 5_000, 0, { caller: 'late' })
      .catch((e: ProviderError) => e.details.retryAfterMs);
    expect(newcomer).toBe(1_131); // behind the three: the slot at 2.131 s
    // Each comes back at its slot (the server's retry delay) and goes without queueing again.
    const back: number[] = [];
    for (const [i, slot] of [
      [0, 1_000],
      [1, 1_500],
      [2, 1_854],
    ] as const) {
      await vi.advanceTimersByTimeAsync(T0 + slot - Date.now());
      back.push(await limiter.run(async () => Date.now() - T0, 5_000, 0, { caller: `job-${i}` }));
    }
    expect(back).toEqual([1_000, 1_500, 1_854]);
  });

  it('a quota exhaustion holds the key’s submits for quotaHoldMs (reads go on), then one submit probes and the others follow one at a time', async () => {
    const limiter = new KeyLimiter(
      'k',
      { maxConcurrent: 8, minIntervalMs: 0, quotaHoldMs: 60_000 },
      { random: () => 0 },
    );
    const spent = quotaExhausted(
      'permanent',
      new ProviderError('permanent', 'answered 402: Insufficient credits', { httpStatus: 402 }),
    );
    const refused = await limiter
      .run(() => Promise.reject(spent), 5_000, 0, { phase: 'submit', caller: 'job-x' })
      .catch((e: unknown) => e);
    expect(isQuotaExhausted(refused)).toBe(true);
    expect(await limiter.heldForMs('submit')).toBe(60_000);
    expect(await limiter.heldForMs('read')).toBe(0);
    expect(await limiter.run(async () => 'read', 5_000, 0, { phase: 'read', caller: 'poll' })).toBe('read');
    const { at, outcomes } = callers(limiter, 3, { phase: 'submit', maxWaitMs: 120_000 });
    await vi.advanceTimersByTimeAsync(59_999);
    expect(at).toEqual([]);
    await vi.advanceTimersByTimeAsync(5_000);
    await outcomes;
    expect(at.map((c) => c.t)).toEqual([60_000, 60_500, 60_854]);
  });

  it('a submit held by the quota hold is refused with LOCAL_COOLDOWN naming the hold, without calling the provider', async () => {
    const limiter = new KeyLimiter('k', { maxConcurrent: 8, minIntervalMs: 0, quotaHoldMs: 600_000 });
    await limiter.coolDown(600_000, 'quota exhausted (HTTP 402)', 'submits');
    let called = false;
    const e = (await limiter
      .run(async () => (called = true), 5_000, 10_000, { phase: 'submit', caller: 'j' })
      .catch((x: unknown) => x)) as ProviderError;
    expect(called).toBe(false);
    expect([e.kind, e.details.code, e.details.retryAfterMs]).toEqual(['cooldown', 'LOCAL_COOLDOWN', 600_000]);
    expect(e.message).toContain('submits of provider key k are held (quota exhausted (HTTP 402))');
  });
});

describe('cool-downs are keyed by the provider key', () => {
  const entry = (apiKey: string) => ({
    kind: 'reference',
    baseUrl: 'http://127.0.0.1:9',
    credentials: { default: { apiKey } },
  });
  const config = parseConfig(
    { providers: { a: entry('sk-shared-0000'), b: entry('sk-shared-0000'), c: entry('sk-other-00000') } },
    {},
  );

  it('two entries on one credential share one limiter and its cool-downs; an entry on another credential does not', async () => {
    const r = new ProviderRegistry(config, {});
    const [a, b, c] = (['a', 'b', 'c'] as const).map((n) => r.resolve(n, 'acme'));
    expect(a!.providerKey).toBe(b!.providerKey);
    expect(a!.providerKey).not.toBe(c!.providerKey);
    expect(a!.limiter).toBe(b!.limiter);
    await a!.limiter
      .run(() => Promise.reject(new ProviderError('cooldown', '429', { httpStatus: 429, retryAfterMs: 30_000 })), 5_000)
      .catch(() => undefined);
    const held = await b!.limiter.run(async () => 'sent', 5_000, 0).catch((e: ProviderError) => e.details.code);
    expect(held).toBe('LOCAL_COOLDOWN');
    expect(await c!.limiter.run(async () => 'sent', 5_000, 0)).toBe('sent');
  });

  it('across workers: a cool-down one worker learns holds the other’s entry on the same credential (through the store), and their release slots are distinct', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      const w1 = new ProviderRegistry(config, {}, {}, store.providerKeys).resolve('a', 'acme');
      const w2 = new ProviderRegistry(config, {}, {}, store.providerKeys).resolve('b', 'acme');
      expect(w1.limiter).not.toBe(w2.limiter);
      await w1.limiter
        .run(
          () => Promise.reject(new ProviderError('cooldown', '429', { httpStatus: 429, retryAfterMs: 20_000 })),
          5_000,
        )
        .catch(() => undefined);
      const waits = await Promise.all(
        [w1, w2, w1, w2].map((w, i) =>
          w.limiter
            .run(async () => 'sent', 5_000, 0, { caller: `job-${i}` })
            .catch((e: ProviderError) => e.details.retryAfterMs!),
        ),
      );
      expect(waits.every((w) => typeof w === 'number' && w > 18_000)).toBe(true);
      const sorted = [...(waits as number[])].sort((x, y) => x - y);
      // One queue through the store: the probe alone for the floor spacing, then distinct slots.
      expect(sorted[1]! - sorted[0]!).toBeGreaterThanOrEqual(RELEASE_SPACING_FLOOR_MS - 5);
      for (let k = 2; k < sorted.length; k++) expect(sorted[k]! - sorted[k - 1]!).toBeGreaterThan(100);
      expect((await store.providerKeys.readCooldown(w1.providerKey))?.reason).toBe('rate limited');
    } finally {
      await store.close();
    }
  });

  it('a submit reads the key’s cool-down and its submits’ hold in one statement; a call given the cool-down read with its job’s row reads none, and still holds while it is in force', async () => {
    const store = await openStore('sqlite::memory:');
    try {
      const w = new ProviderRegistry(config, {}, {}, store.providerKeys).resolve('a', 'acme');
      const count = () => store.sqliteStatements!.prepared + store.sqliteStatements!.reused;
      let before = count();
      expect(await w.limiter.run(async () => 'sent', 5_000, 0, { phase: 'submit' })).toBe('sent');
      expect(count() - before).toBe(1);
      before = count();
      const nothing = new Map([[w.providerKey, undefined]]);
      expect(await w.limiter.run(async () => 'sent', 5_000, 0, { seen: nothing })).toBe('sent');
      expect(count() - before).toBe(0);
      // Another worker's 429, as the job's row showed it: the call is held (it takes its release slot).
      await store.providerKeys.setCooldown(w.providerKey, Date.now() + 20_000, 'RATE_LIMITED');
      const seen = new Map([[w.providerKey, await store.providerKeys.readCooldown(w.providerKey)]]);
      const held = await w.limiter.run(async () => 'sent', 5_000, 0, { seen }).catch((e: ProviderError) => e);
      expect(held).toBeInstanceOf(ProviderError);
      expect((held as ProviderError).details).toMatchObject({ code: 'LOCAL_COOLDOWN' });
      expect((held as ProviderError).message).toContain('RATE_LIMITED');
    } finally {
      await store.close();
    }
  });
});

describe('quota and credit exhaustion: one classification', () => {
  const res = (status: number, text: string): ProviderResponse => ({
    status,
    headers: new Headers(),
    body: undefined,
    text,
    evidence: { endpoint: 'POST http://p/x', at: new Date(T0).toISOString(), httpStatus: status },
  });
  const classify = (status: number, code: string | undefined, message: string, phase: 'submit' | 'read' = 'submit') =>
    httpError(res(status, message), phase, code, message, []);

  it('refused fields in the body are shown in the message but never classify: a reason that names a wait or credits changes neither the wait nor quota', () => {
    const withFields = (status: number, body: Record<string, unknown>): ProviderResponse => ({
      ...res(status, JSON.stringify(body)),
      body,
    });
    const limited = httpError(
      withFields(429, { message: 'Too many requests', errors: [['x', 'wait at most 3600 seconds']] }),
      'submit',
      undefined,
      'Too many requests',
      [],
    );
    expect(limited.kind).toBe('cooldown');
    expect(limited.details.retryAfterMs).toBeUndefined();
    expect(limited.message).toContain('(x: wait at most 3600 seconds)');
    const refused = httpError(
      withFields(403, {
        message: 'Forbidden',
        errors: [
          { field: 'plan', message: 'insufficient credits' },
          { loc: ['a', 1], msg: { why: 'nested' } },
        ],
      }),
      'submit',
      undefined,
      'Forbidden',
      [],
    );
    expect([refused.kind, refused.details.code]).toEqual(['permanent', undefined]);
    expect(refused.message).toContain('(plan: insufficient credits; a.1: {"why":"nested"})');
  });

  it('402 answers are quota exhaustion (Firecrawl’s insufficient credits, Apify’s usage and payment types), permanent with code QUOTA_EXHAUSTED and the provider’s code kept', () => {
    const fc = classify(
      402,
      undefined,
      'Insufficient credits to perform this request. For more credits, you can upgrade your plan at https://firecrawl.dev/pricing or try changing the request limit to a lower value.',
    );
    expect([fc.kind, fc.details.code, fc.details.quota, fc.details.httpStatus]).toEqual([
      'permanent',
      QUOTA_EXHAUSTED,
      true,
      402,
    ]);
    for (const type of ['platform-feature-disabled', 'not-enough-usage-to-run-paid-actor', 'x402-payment-required']) {
      const e = classify(402, type, 'You have exceeded your monthly usage limit.');
      expect([e.kind, e.details.code, e.details.providerCode]).toEqual(['permanent', QUOTA_EXHAUSTED, type]);
    }
  });

  it('Apify’s concurrency and memory refusals are not quota: the first is a cool-down, the second stays for the adapter to cool down', () => {
    expect(
      classify(
        402,
        'concurrent-runs-limit-exceeded',
        'By launching this job you will exceed your limit of 5 concurrent Actor runs',
      ).kind,
    ).toBe('cooldown');
    const mem = classify(
      402,
      'actor-memory-limit-exceeded',
      'By launching this job you will exceed the memory limit of 8192MB for all your Actor runs and builds',
    );
    expect(mem.details.quota).toBeUndefined();
    expect(mem.details.code).toBe('actor-memory-limit-exceeded');
  });

  it('a 429 or 403 is quota only when its code or text says the quota or credits are used up; a quota per unit of time is a rate limit', () => {
    expect(classify(429, 'QUOTA_EXCEEDED', 'Monthly quota exceeded').details.code).toBe(QUOTA_EXHAUSTED);
    expect(classify(429, undefined, 'Quota exceeded for quota metric requests per minute').kind).toBe('cooldown');
    expect(
      classify(
        429,
        undefined,
        'Rate limit exceeded. Consumed (req/min): 12, Remaining (req/min): 0. Upgrade your plan at https://firecrawl.dev/pricing for increased rate limits or please retry after 7s',
      ).kind,
    ).toBe('cooldown');
    expect(
      classify(403, undefined, 'You have exhausted the API Credits available in this monthly cycle.').details.code,
    ).toBe(QUOTA_EXHAUSTED);
    const blocked = classify(403, undefined, 'This website is no longer supported');
    expect([blocked.kind, blocked.details.quota]).toEqual(['permanent', undefined]);
    expect(saysQuotaExhausted(undefined, 'Account is suspended')).toBe(true);
    expect(saysQuotaExhausted(undefined, 'Account is new, please activate it in account settings')).toBe(false);
  });

  it('ScraperAPI: a 403 on submit is out of credits whatever its wording, unless it names max_cost', () => {
    const plain = scraperApiError(classify(403, undefined, 'Forbidden'), res(403, 'Forbidden'), 'submit');
    expect(plain.details.code).toBe(QUOTA_EXHAUSTED);
    const maxCost =
      'This request exceeds your max_cost. You can view the cost per request in your response header or in the API Playground on the dashboard.';
    const capped = scraperApiError(classify(403, undefined, maxCost), res(403, maxCost), 'submit');
    expect([capped.kind, capped.details.quota]).toEqual(['permanent', undefined]);
  });

  it('a quota failure is non-retryable with its own type, Provider.quota_exhausted, and keeps its code and HTTP status', () => {
    const f = toFailure(classify(402, undefined, 'Insufficient credits'));
    expect([f.type, f.nonRetryable]).toEqual(['Provider.quota_exhausted', true]);
    expect(f.details?.[0]).toMatchObject({ kind: 'permanent', code: QUOTA_EXHAUSTED, httpStatus: 402 });
  });
});
