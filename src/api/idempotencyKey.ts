/**
 * The `Idempotency-Key` rule of `POST /v1/scrapes`: one (account, key) is one job, and the key
 * stays bound to the request body it was first used with.
 *
 * - A new key is claimed as (account, key) → (fingerprint of the body, job) in the store
 *   (`api_idempotency`) before the job starts, then the job starts: the answer is `202`. When
 *   nothing starts (invalid input, a budget's refusal, Temporal unreachable) the request releases
 *   its hold, and the key is free again once no other request with the same body holds it (a
 *   claim counts its holders): a same-body request whose start is under way keeps the key, so
 *   another body that comes meanwhile is refused rather than started and answered with a job made
 *   from the first body. The key is never released once its job has a row made from its body.
 * - A claim whose job never started (no row in `jobs`: the API process died between claim and
 *   start) and that no request took for {@link API_CLAIM_STALE_MS} is dead: a request with
 *   another body takes it over and starts its own job. A same-body request simply joins it and
 *   starts the job, as for any claim.
 * - The same key with the same body (its canonical JSON with the defaults and the provider
 *   applied and the URL in its WHATWG serialisation, so `{"url": …}` and `{"url": …, "format":
 *   "markdown"}` are one body, and so are `HTTP://Example.COM` and `http://example.com/`, one
 *   address and one job for the client too) is the same job:
 *   `200`, `Idempotent-Replayed: true`. A client that lost the first answer repeats the request
 *   and gets its job, never a second one.
 * - The same key with another body is refused with `422 idempotency-key-reused` (naming the job),
 *   whether the record says so, the workflow's own parameters do (`IdempotencyConflictError`), or
 *   a concurrent request with another body recorded the key first.
 *
 * Without the header the key is derived from the request by the client (`client/start.ts`), so
 * the same request is the same job; a repeat then also answers `200`.
 *
 * Why a claim counts its holders rather than leaving the last word to the job's own parameters:
 * the client's conflict check (`IdempotencyConflictError`) compares the fingerprint of provider,
 * URL, format and options only, so two bodies that differ in `row`, `batch_id`, `priority` or
 * `policy` are one job to it; only the claim knows the whole body, and it must not change under a
 * request that is starting its job.
 */
import { canonicalUrl, IdempotencyConflictError, jobIdFor, type ScrapeClient } from '../client/index.js';
import { fingerprint } from '../lib/hash.js';
import type { ApiClaim, Store } from '../store/index.js';
import { ApiProblem } from './problems.js';
import type { CreateScrapeBody } from './requestSchemas.js';

/** The `422` for an `Idempotency-Key` reused by the account with another body. */
function reusedKey(jobId: string): ApiProblem {
  return new ApiProblem(
    'idempotency-key-reused',
    'this Idempotency-Key was already used by your account with a different request body; repeat the original body, or use a new key',
    { job_id: jobId },
  );
}

/**
 * How long (ms) a claim whose job never started protects its key against another body: 5 minutes.
 * A live request holds a claim without a job row only for the store statements between its claim
 * and its job's insert (milliseconds; the Temporal call comes after the row); a claim nobody took
 * for this long belongs to a process that died, and is taken over.
 */
export const API_CLAIM_STALE_MS = 5 * 60_000;

/** What {@link startScrapeOnce} did: the job of the request, and whether it was a repeat. */
export interface StartOnceOutcome {
  jobId: string;
  /** True when the key was recorded before (the answer is the earlier job: `200`), false for a new key (`202`). */
  replayed: boolean;
}

/**
 * Starts the scrape of `body` for `account` under the rule above. `provider` is the provider
 * name the request resolves to (the body's, else the configured default). Throws
 * {@link ApiProblem} `idempotency-key-reused` for a key used with another body, and whatever the
 * client throws for the start itself (invalid input, Temporal unreachable).
 */
export async function startScrapeOnce(
  deps: { client: ScrapeClient; store: Store },
  request: { account: string; idempotencyKey?: string; body: CreateScrapeBody; provider: string },
): Promise<StartOnceOutcome> {
  const { client, store } = deps;
  const { account, idempotencyKey: headerKey, body, provider } = request;
  const bodyHash = fingerprint({ ...body, url: canonicalUrl(body.url), provider });
  // Records made before the URL was canonicalised hold the hash of the URL as typed: that is this body too.
  const typedHash = fingerprint({ ...body, provider });
  const sameBody = (hash: string) => hash === bodyHash || hash === typedHash;
  let claim: ApiClaim | undefined;
  if (headerKey) {
    // The key is claimed before anything starts: of two requests sent at once with this key and
    // different bodies, the one that claims it is the one whose body starts the job, and the
    // other is refused before it could be answered with that job.
    claim = await store.apiIdempotency.claim({
      account,
      key: headerKey,
      bodyHash,
      sameHashes: [bodyHash, typedHash],
      jobId: jobIdFor(account, headerKey),
      staleAfterMs: API_CLAIM_STALE_MS,
    });
    if (claim.outcome === 'other') throw reusedKey(claim.row.job_id);
  }
  // The hold is on the body the row holds (a same-body record may carry the typed URL's hash).
  const held = claim && { account, key: headerKey!, bodyHash: claim.row.body_hash };
  let ref;
  try {
    ref = await client.startScrape({
      account,
      key: headerKey,
      url: body.url,
      provider,
      format: body.format,
      options: body.options,
      row: body.row,
      batchId: body.batch_id,
      priority: body.priority,
      policy: body.policy,
    });
  } catch (e) {
    // Nothing was started for this hold (invalid input, a budget's refusal, Temporal unreachable,
    // the key's job started elsewhere with other parameters): the key is free again unless another
    // request with this body holds it or the key's job exists.
    const conflict = e instanceof IdempotencyConflictError;
    if (held) await store.apiIdempotency.release({ ...held, jobHasOtherParameters: conflict });
    if (conflict) throw reusedKey(String((e as IdempotencyConflictError).details.jobId));
    throw e;
  }
  try {
    if (claim?.outcome === 'taken_over' && !ref.created) {
      // The dead claim's start was alive after all and made the key's job from its own body: the
      // key is that body's again, and this request is not answered with that job.
      await store.apiIdempotency.giveBack({ ...held!, previousHash: claim.previousHash });
      throw reusedKey(ref.jobId);
    }
    // Recorded (again) after the start: a request without the header is recorded here, and a
    // request whose record was lost is recorded by its repeat.
    const remembered = await store.apiIdempotency.remember({ account, key: ref.key, bodyHash, jobId: ref.jobId });
    if (headerKey && !sameBody(remembered.row.body_hash)) throw reusedKey(ref.jobId);
    return { jobId: ref.jobId, replayed: claim ? claim.outcome === 'joined' : !remembered.inserted };
  } finally {
    if (held && !(claim?.outcome === 'taken_over' && !ref.created)) await store.apiIdempotency.settle(held);
  }
}
