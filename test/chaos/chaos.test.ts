/**
 * The chaos run, small: 40 logical requests through the real stack while the provider drops 202s
 * after committing, answers 5xx and 429 bursts, answers slowly, fails and never finishes jobs,
 * workers are SIGKILLed every few seconds and the store refuses writes for seconds at a time.
 * The chaos lasts 45 s after the last start, then stops; every job must then end. The full run
 * (500 requests) is `npm run bench:chaos`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { formatChaosReport, runChaos } from '../../bench/chaos.js';
import { keepLogFile, keepSqliteFile, recordConfigSecrets } from '../helpers/evidence.js';

/** Keeps the chaos run's store, worker logs and provider keys for the secrets scan, then deletes its directory. */
function keepChaosEvidence(dir: string | undefined): void {
  if (!dir || !fs.existsSync(dir)) return;
  for (const f of fs.readdirSync(dir)) {
    const file = path.join(dir, f);
    if (f.endsWith('.json')) recordConfigSecrets('chaos', file);
    else if (f.endsWith('.db')) keepSqliteFile(file, `chaos-${f}`);
    else if (f.endsWith('.log')) keepLogFile(`chaos-${f}`, file);
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

describe('chaos (small)', () => {
  it('creates exactly one provider job per request, writes no duplicate result and loses no job', async () => {
    const { address, namespace } = inject('temporal');
    let kept: string | undefined;
    const log = (line: string) => void (kept = /kept (\S+)/.exec(line)?.[1] ?? kept);
    const report = await runChaos({
      requests: 40,
      temporalAddress: address,
      namespace,
      workers: 2,
      killEveryMs: 5_000,
      // Long enough that a job kept waiting for a slot by killed workers' attempts (each holds its
      // slot until its timeout) is still sent on a loaded machine: a job's deadline is not what this run tests.
      deadlineMs: 120_000,
      chaosMs: 45_000,
      convergeMs: 300_000,
      seed: 7,
      log,
      keepDir: true,
    }).finally(() => keepChaosEvidence(kept));
    console.log(formatChaosReport(report));
    expect(
      report.providerJobsCreated,
      `provider jobs per request; jobs that did not complete: ${JSON.stringify(report.notCompleted)}`,
    ).toBe(report.logicalRequests);
    expect(report.duplicateResultRows).toBe(0);
    expect(report.lostJobs).toEqual([]);
    expect(report.workerKills).toBeGreaterThan(0);
    expect(report.storeOutages).toBeGreaterThan(0);
    expect(Object.values(report.states).reduce((a, b) => a + b, 0)).toBe(report.logicalRequests);
  }, 420_000);
});
