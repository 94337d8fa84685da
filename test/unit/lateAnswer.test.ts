/**
 * When a task recorded in the store is one the workflow has not seen: recorded after the reconcile
 * was decided without it ("undecided", the job handed to an operator) and before any operator
 * resolution. Only then does a late answer wake the workflow.
 */
import { describe, expect, it } from 'vitest';
import { taskRecordedAfterUndecided } from '../../src/activities/submit/lateAnswer.js';
import type { JobEventRow } from '../../src/store/index.js';

let id = 0;
const ev = (type: string, at: string): JobEventRow =>
  ({ id: ++id, job_id: 'j', type, state: null, detail: null, at }) as unknown as JobEventRow;

describe('taskRecordedAfterUndecided', () => {
  it('is true for a task recorded after the last undecided reconcile', () => {
    const t = [
      ev('submit_ambiguous', '2026-12-02T07:00:00Z'),
      ev('reconcile_undecided', '2026-12-02T07:00:05Z'),
      ev('task_recorded', '2026-12-02T07:00:09Z'),
    ];
    expect(taskRecordedAfterUndecided(t)).toBe(true);
  });

  it('is false without an undecided reconcile, or when the task came before it', () => {
    expect(
      taskRecordedAfterUndecided([
        ev('submit_ambiguous', '2026-12-02T07:00:00Z'),
        ev('task_recorded', '2026-12-02T07:00:02Z'),
      ]),
    ).toBe(false);
    expect(
      taskRecordedAfterUndecided([
        ev('task_recorded', '2026-12-02T07:00:02Z'),
        ev('reconcile_undecided', '2026-12-02T07:00:05Z'),
      ]),
    ).toBe(false);
  });

  it('is false once an operator’s resolution was adopted after the decision; a refused one changes nothing', () => {
    const resolve = (outcome: string, at: string) => ({
      ...ev('operator_resolve', at),
      detail: JSON.stringify({ outcome }),
    });
    const adopted = [
      ev('reconcile_undecided', '2026-12-02T07:00:05Z'),
      resolve('adopted', '2026-12-02T07:00:20Z'),
      ev('task_recorded', '2026-12-02T07:00:21Z'),
    ];
    expect(taskRecordedAfterUndecided(adopted)).toBe(false);
    const refused = [
      ev('reconcile_undecided', '2026-12-02T07:00:05Z'),
      resolve('refused', '2026-12-02T07:00:20Z'),
      ev('task_recorded', '2026-12-02T07:00:40Z'),
    ];
    expect(taskRecordedAfterUndecided(refused)).toBe(true);
  });

  it('counts only a decision made at or after the late call left (sinceMs)', () => {
    const t = [ev('reconcile_undecided', '2026-12-02T07:00:05Z'), ev('task_recorded', '2026-12-02T07:00:30Z')];
    expect(taskRecordedAfterUndecided(t, Date.parse('2026-12-02T07:00:05Z'))).toBe(true);
    expect(taskRecordedAfterUndecided(t, Date.parse('2026-12-02T07:00:06Z'))).toBe(false);
  });
});
