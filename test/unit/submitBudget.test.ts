/**
 * A submit that meets only cool-downs until its activity's schedule-to-close time is spent ends
 * with a reason that says nothing was sent and nothing was created (`SUBMIT_NOT_SENT`, permanent),
 * not with the last cool-down's own words; with time left the cool-down stays retryable; other
 * errors (an ambiguous submit above all) are never rewritten.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { toFailure } from '../../src/activities/failures.js';
import { unsentAtBudgetEnd } from '../../src/activities/attempt.js';
import { ProviderError } from '../../src/providers/shared/errors.js';

const cooling = () =>
  new ProviderError('cooldown', 'provider key k is cooling down (RATE_LIMITED)', {
    code: 'LOCAL_COOLDOWN',
    retryAfterMs: 2_000,
  });

/** An activity environment whose schedule-to-close (60 s) leaves `leftMs`. */
const withLeft = (leftMs: number) =>
  new MockActivityEnvironment({
    attempt: 7,
    scheduleToCloseTimeoutMs: 60_000,
    scheduledTimestampMs: Date.now() - 60_000 + leftMs,
  });

describe('a submit cooled down to the end of its time', () => {
  it('with no room for another try: permanent SUBMIT_NOT_SENT naming the last cool-down and that nothing was created', async () => {
    const raw: unknown = await withLeft(1_500).run(async () => unsentAtBudgetEnd(cooling()));
    const out = raw as ProviderError;
    expect(out).toBeInstanceOf(ProviderError);
    expect([out.kind, out.details.code]).toEqual(['permanent', 'SUBMIT_NOT_SENT']);
    expect(out.message).toMatch(/no submit could be sent[\s\S]*RATE_LIMITED[\s\S]*created nothing/);
    const failure = toFailure(out);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({ code: 'SUBMIT_NOT_SENT' });
  });

  it('with time for another try, and for any other error, the error is returned unchanged', async () => {
    const e = cooling();
    expect(await withLeft(30_000).run(async () => unsentAtBudgetEnd(e))).toBe(e);
    const lost = new ProviderError('ambiguous', 'POST /jobs: socket hang up', { code: 'ECONNRESET' });
    expect(await withLeft(500).run(async () => unsentAtBudgetEnd(lost))).toBe(lost);
    // Outside an activity there is no schedule-to-close: nothing to rewrite.
    expect(unsentAtBudgetEnd(e)).toBe(e);
  });
});
