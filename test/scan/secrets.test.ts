/**
 * The secrets scan (proof at scale that no secret leaks): the last project of `npm test` (see
 * `vitest.config.ts`), run once every other test file has finished and before the dev server
 * stops. It searches every history of the run on the dev server (workflows started since the run
 * began, payloads decoded), every store the stacks kept, every log line and every CLI/HTTP answer
 * the helpers recorded (`test/helpers/evidence.ts`) for every configured secret value and for
 * credential patterns (`test/helpers/secretScan.ts`), prints the searched volume per source and
 * fails with the hits listed. `test/unit/secretScan.test.ts` proves that it can fail.
 */
import { Client, Connection } from '@temporalio/client';
import { describe, expect, inject, it } from 'vitest';
import { API_KEYS } from '../helpers/api.js';
import { FIXTURE_API_KEYS, FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { KEYS } from '../helpers/stack.js';
import {
  formatScanReport,
  recordedSecrets,
  SCAN_SOURCES,
  scanAnswers,
  scanHistories,
  scanLogs,
  SecretScanner,
  scanStores,
} from '../helpers/secretScan.js';

/** Secrets every stack configures (the recorded ones add the random webhook secrets, codec keys, …). */
const STATIC_SECRETS = [
  ...Object.values(KEYS),
  ...Object.values(FIXTURE_KEYS),
  ...Object.values(API_KEYS),
  ...Object.values(FIXTURE_API_KEYS),
  'admin-test',
  'admin-fixture',
  'admin-ui',
  'admin-secret',
];

describe('secrets scan of the whole test run', () => {
  it('finds no configured secret and no credential pattern in any history, store, log or recorded answer', async () => {
    const { dir, startedAt } = inject('evidence');
    const { address, namespace } = inject('temporal');
    const codecKeys = process.env.SCRAPE_CODEC_KEYS;
    const secrets = [
      ...STATIC_SECRETS,
      ...recordedSecrets(dir),
      ...(codecKeys ? codecKeys.split(',').map((e) => e.slice(e.indexOf(':') + 1)) : []),
    ];
    const scanner = new SecretScanner(secrets);
    const t0 = Date.now();
    const connection = await Connection.connect({ address });
    try {
      await scanHistories(scanner, new Client({ connection, namespace }), {
        query: `StartTime >= "${startedAt}"`,
        codecKeys,
        concurrency: 8,
      });
    } finally {
      await connection.close();
    }
    scanStores(scanner, dir);
    scanLogs(scanner, dir);
    scanAnswers(scanner, dir);
    const report = scanner.result();
    console.log(`${formatScanReport(report)}\n  scanned in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // Run alone (without the suites that make the evidence) it has nothing to search: that is a failure, not a pass.
    for (const s of SCAN_SOURCES)
      expect(report.volume[s].items, `nothing to scan in ${s}: run the scan as part of npm test`).toBeGreaterThan(0);
    expect(report.unscanned).toEqual([]);
    expect(report.hits.map((h) => `${h.source} ${h.item}: ${h.what}: …${h.excerpt}…`)).toEqual([]);
  });
});
