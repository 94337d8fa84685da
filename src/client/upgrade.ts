/**
 * The upgrade check: open runs of workflow types this release no longer serves. A release that
 * retires a workflow type (its code deleted) is deployed only once every run of that type has
 * ended on the release that started it, as Temporal's guidance on retiring workflow code asks
 * (drain, then delete): `scrape upgrade-check` refuses while any is open, and a worker that starts
 * beside open ones warns, naming them. docs/operations.md, "Upgrading", has the steps.
 */
import type { Client } from '@temporalio/client';
import { RETIRED_WORKFLOW_TYPES } from '../workflows/scrape/messages.js';

/** One open run of a retired type. `startTime`: UTC ISO-8601. */
export interface RetiredRun {
  workflowId: string;
  runId: string;
  type: string;
  startTime: string;
}

/** What the check found: how many runs of retired types are open, the first of them, and the visibility query that lists them all. */
export interface RetiredRuns {
  count: number;
  runs: RetiredRun[];
  query: string;
  types: readonly string[];
}

/** The visibility query of open runs of the retired workflow types. */
const RETIRED_RUNS_QUERY = `WorkflowType IN (${RETIRED_WORKFLOW_TYPES.map((t) => `"${t}"`).join(', ')}) AND ExecutionStatus = "Running"`;

/**
 * Counts the open runs of retired workflow types in `temporal`'s namespace and lists the first
 * `sample` (default 20). Throws what the Temporal client throws when the server cannot answer.
 */
export async function openRetiredRuns(temporal: Client, sample = 20): Promise<RetiredRuns> {
  const { count } = await temporal.workflow.count(RETIRED_RUNS_QUERY);
  const runs: RetiredRun[] = [];
  if (count > 0)
    for await (const w of temporal.workflow.list({ query: RETIRED_RUNS_QUERY, pageSize: sample })) {
      runs.push({ workflowId: w.workflowId, runId: w.runId, type: w.type, startTime: w.startTime.toISOString() });
      if (runs.length >= sample) break;
    }
  return { count, runs, query: RETIRED_RUNS_QUERY, types: RETIRED_WORKFLOW_TYPES };
}
