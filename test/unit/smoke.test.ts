/**
 * `npm run smoke:providers` without provider keys (this machine has no network): every kind is
 * skipped with the reason, nothing is started, the exit code is 0. The run path is tested against
 * the reference provider in `test/integration/smoke-providers.test.ts`.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { planSmoke } from '../smoke/providers.js';
import { SMOKE_RECIPES } from '../smoke/recipes.js';

const REPO = path.resolve(import.meta.dirname, '../..');

describe('smoke:providers skip path', () => {
  it('plans: a kind runs only with every variable set, a shipped kind and a recipe', () => {
    const none = planSmoke({});
    expect(none.map((p) => p.kind)).toEqual(SMOKE_RECIPES.map((r) => r.kind));
    expect(none.every((p) => !p.run)).toBe(true);
    expect(none.find((p) => p.kind === 'oxylabs')).toEqual({
      kind: 'oxylabs',
      run: false,
      reason: 'missing OXYLABS_USER, OXYLABS_PASS',
    });
    expect(planSmoke({ OXYLABS_USER: 'u' }).find((p) => p.kind === 'oxylabs')).toMatchObject({
      run: false,
      reason: 'missing OXYLABS_PASS',
    });
    const ref = planSmoke({ SMOKE_REFERENCE_URL: 'http://127.0.0.1:1', SMOKE_REFERENCE_KEY: 'k' }).find(
      (p) => p.kind === 'reference',
    );
    expect(ref).toMatchObject({ kind: 'reference', run: true });
    const custom = planSmoke({ X: '1' }, [
      { kind: 'not-a-kind', env: ['X'] },
      { kind: 'reference', env: ['X'] },
    ]);
    expect(custom).toEqual([
      { kind: 'not-a-kind', run: false, reason: 'kind "not-a-kind" is not shipped yet (src/providers/kinds.ts)' },
      { kind: 'reference', run: false, reason: 'no smoke recipe for "reference" yet (test/smoke/recipes.ts)' },
    ]);
  });

  it('the command with no keys prints every kind as skipped, starts nothing and exits 0', () => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_OPTIONS: process.env.NODE_OPTIONS,
    };
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO, 'test/smoke/providers.ts')], {
      cwd: REPO,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    for (const recipe of SMOKE_RECIPES) expect(lines.some((l) => l.startsWith(`skip  ${recipe.kind} `))).toBe(true);
    expect(lines.at(-1)).toBe(
      `ran 0 of ${SMOKE_RECIPES.length} kinds: set a kind's variables to run it (see docs/providers.md, "Trying a provider with your own keys")`,
    );
    expect(r.stdout).not.toMatch(/temporal|worker/i);
  });
});
