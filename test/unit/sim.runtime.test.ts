/**
 * The reference provider's log-normal run times (`runLogSigma`): what the learned-schedule
 * benchmark relies on — the same page runs as long in every account and run, the median is
 * `minRunMs`, and the spread is the one asked for.
 */
import { describe, expect, it } from 'vitest';
import { quantile } from '../../src/model/schedule.js';
import { runTimeMs } from '../../tools/sim/util.js';

const urls = Array.from({ length: 4_000 }, (_, i) => `http://127.0.0.1:4321/page-${i % 104}?job=${i}`);

describe('log-normal run times of the reference provider', () => {
  it('without a spread every job runs minRunMs; with one, the same page runs as long whatever the host and port', () => {
    expect(runTimeMs({ minRunMs: 5_000 }, urls[0]!)).toBe(5_000);
    const profile = { minRunMs: 60_000, runLogSigma: 0.6 };
    expect(runTimeMs(profile, 'http://127.0.0.1:4321/a?job=7')).toBe(
      runTimeMs(profile, 'http://localhost:9999/a?job=7'),
    );
    expect(runTimeMs(profile, 'http://127.0.0.1:4321/a?job=7')).not.toBe(
      runTimeMs(profile, 'http://127.0.0.1:4321/a?job=8'),
    );
  });

  it('median minRunMs and log-spread sigma over many pages', () => {
    const ds = urls.map((u) => runTimeMs({ minRunMs: 60_000, runLogSigma: 0.6 }, u));
    expect(quantile(ds, 0.5) / 60_000).toBeGreaterThan(0.93);
    expect(quantile(ds, 0.5) / 60_000).toBeLessThan(1.07);
    const logs = ds.map((d) => Math.log(d / 60_000));
    const sd = Math.sqrt(logs.reduce((s, x) => s + x * x, 0) / logs.length);
    expect(sd).toBeGreaterThan(0.55);
    expect(sd).toBeLessThan(0.65);
  });
});
