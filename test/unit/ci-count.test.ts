/**
 * CI's closing line: `.ci/run` sums vitest's JSON reports of `npm test` and `npm run test:cluster`
 * into one plain last line, `N passed, N failed` (after a line `ci: N skipped`), and exits non-zero when no test
 * ran or any failed. Checked here on sample reports through the script's own `--count` mode (the
 * same function its last step calls): a suite that left no report, failed outside its tests or
 * exited non-zero without a failed test counts as one failed test.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ci-count-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface FileResult {
  name: string;
  status: 'passed' | 'failed';
  message?: string;
  tests: ('passed' | 'failed' | 'skipped' | 'todo')[];
}

/** Writes a report shaped like vitest 4's JSON reporter output; returns its path. */
function report(name: string, files: FileResult[], success?: boolean): string {
  const all = files.flatMap((f) => f.tests);
  const count = (s: string) => all.filter((t) => t === s).length;
  const body = {
    numTotalTestSuites: files.length,
    numTotalTests: all.length,
    numPassedTests: count('passed'),
    numFailedTests: count('failed'),
    numPendingTests: count('skipped'),
    numTodoTests: count('todo'),
    success: success ?? count('failed') === 0,
    testResults: files.map((f) => ({
      name: f.name,
      status: f.status,
      message: f.message ?? '',
      assertionResults: f.tests.map((t, i) => ({
        title: `t${i}`,
        fullName: `t${i}`,
        status: t === 'skipped' ? 'pending' : t,
        failureMessages: [],
      })),
    })),
  };
  const file = path.join(dir, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(body));
  return file;
}

/** Runs `bash .ci/run --count …`; returns its exit status, its lines and its last line. */
function count(...suites: string[]) {
  const r = spawnSync('bash', [path.join(REPO, '.ci', 'run'), '--count', ...suites], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 30_000,
  });
  const lines = r.stdout.trimEnd().split('\n');
  return { status: r.status, lines, last: lines.at(-1) ?? '', stderr: r.stderr };
}

const PLAIN = /^\d+ passed, \d+ failed$/;

describe('.ci/run --count', () => {
  it('sums the passed, failed and skipped tests of both suites into one plain last line; exit 0 when all passed', () => {
    const a = report('a', [
      { name: 'x.test.ts', status: 'passed', tests: ['passed', 'passed', 'skipped'] },
      { name: 'y.test.ts', status: 'passed', tests: ['passed', 'todo'] },
    ]);
    const b = report('b', [{ name: 'z.test.ts', status: 'passed', tests: ['passed', 'passed'] }]);
    const r = count(`test:0:${a}`, `cluster:0:${b}`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.last).toBe('5 passed, 0 failed');
    expect(r.lines.at(-2)).toBe('ci: 2 skipped');
    expect(r.last).toMatch(PLAIN);
  });

  it('a failed test makes the exit status non-zero and is counted', () => {
    const a = report('fail', [{ name: 'x.test.ts', status: 'failed', tests: ['passed', 'failed', 'failed'] }]);
    const b = report('ok', [{ name: 'z.test.ts', status: 'passed', tests: ['passed'] }]);
    const r = count(`test:1:${a}`, `cluster:0:${b}`);
    expect(r.status).toBe(1);
    expect(r.last).toBe('2 passed, 2 failed');
    expect(r.lines.at(-2)).toBe('ci: 0 skipped');
  });

  it('a file that failed outside its tests (its setup threw) counts as one failed test', () => {
    const a = report(
      'setup',
      [
        { name: 'x.test.ts', status: 'passed', tests: ['passed'] },
        { name: 'broken.test.ts', status: 'failed', message: 'beforeAll: no Chromium', tests: ['skipped', 'skipped'] },
      ],
      false,
    );
    const r = count(`test:1:${a}`);
    expect(r.status).toBe(1);
    expect(r.last).toBe('1 passed, 1 failed');
    expect(r.lines.at(-2)).toBe('ci: 2 skipped');
    expect(r.lines.join('\n')).toContain('broken.test.ts failed outside its tests: beforeAll: no Chromium');
  });

  it('a suite that left no report (its runner crashed, or never ran) counts as one failed test', () => {
    const a = report('only', [{ name: 'x.test.ts', status: 'passed', tests: ['passed', 'passed'] }]);
    const r = count(`test:0:${a}`, `cluster:1:${path.join(dir, 'missing.json')}`);
    expect(r.status).toBe(1);
    expect(r.last).toBe('2 passed, 1 failed');
    expect(r.lines.at(-2)).toBe('ci: 0 skipped');
    expect(r.lines.join('\n')).toMatch(/cluster: no readable report/);
  });

  it('a non-zero exit with every test passed (an unhandled error) counts as one failed test', () => {
    const a = report('errors', [{ name: 'x.test.ts', status: 'passed', tests: ['passed'] }], false);
    const r = count(`test:1:${a}`);
    expect(r.status).toBe(1);
    expect(r.last).toBe('1 passed, 1 failed');
    expect(r.lines.at(-2)).toBe('ci: 0 skipped');
  });

  it('no test run is a failure, still closed by the plain line', () => {
    const a = report('empty', []);
    const r = count(`test:0:${a}`);
    expect(r.status).toBe(1);
    expect(r.lines).toContain('ci: no test ran');
    expect(r.last).toBe('0 passed, 0 failed');
    expect(r.lines.at(-2)).toBe('ci: 0 skipped');
  });
});
