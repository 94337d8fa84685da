/**
 * `npm run smoke:providers` run path, against the reference provider on loopback (the only kind
 * reachable here): with its variables set it runs one real job through the whole product (the
 * run's Temporal server via `TEMPORAL_ADDRESS`, a worker, a SQLite store) and reports it, while
 * the kinds without keys are skipped.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { startReferenceFixture, type ReferenceFixture } from '../fixtures/providers/reference/server.js';
import { runSmoke } from '../smoke/providers.js';
import { SMOKE_RECIPES } from '../smoke/recipes.js';

let pages: PageServer;
let fixture: ReferenceFixture;
beforeAll(async () => {
  pages = await startPageServer();
  fixture = await startReferenceFixture({ profile: { concurrency: 4 } });
});
afterAll(async () => {
  await fixture?.close();
  await pages?.close();
});

describe('smoke:providers run path', () => {
  it('runs one job for the kind whose variables are set, skips the rest, and reports it', async () => {
    const { address, namespace } = inject('temporal');
    const lines: string[] = [];
    const target = pages.pageUrl('001');
    const out = await runSmoke({
      env: {
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: namespace,
        SMOKE_REFERENCE_URL: fixture.url,
        SMOKE_REFERENCE_KEY: FIXTURE_KEYS.acme,
        SMOKE_REFERENCE_TARGET: target,
      },
      log: (l) => lines.push(l),
    });
    expect(out.ok).toBe(true);
    expect(out.results).toEqual([expect.objectContaining({ kind: 'reference', state: 'completed', documents: 0 })]);
    expect(out.results[0]!.title).toBeTruthy();
    expect(fixture.sim.jobsFor('acme').map((j) => j.url)).toEqual([target]);
    expect(lines.filter((l) => l.startsWith('skip  '))).toHaveLength(SMOKE_RECIPES.length - 1);
    expect(lines.find((l) => l.startsWith('ran   reference'))).toMatch(
      /completed in [\d.]+ s; task \S+; title ".+"; 0 documents$/,
    );
    expect(lines.at(-1)).toBe(
      `ran 1 of ${SMOKE_RECIPES.length} kinds (1 completed), skipped ${SMOKE_RECIPES.length - 1}`,
    );
    expect(lines.join('\n')).not.toContain(FIXTURE_KEYS.acme);
  });
});
