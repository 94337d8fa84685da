/**
 * The operator's way out of `unknown` (workflows v2 and v3, and v1's `resolve`): a task ID given with
 * `resolve` is verified against the provider's record before it is adopted — bound to no other
 * job of the same provider account, readable with the job's own credential, and for this job's
 * request where the provider's record says what it is for. Every attempt is audited in the
 * timeline (`operator_resolve`).
 */
import { isProviderError } from '../../providers/shared/errors.js';
import { providerKeys } from '../../providers/shared/keys.js';
import type { ActivityKit } from '../context.js';

/** Outcome of `adoptTask`: the task bound to the job, or why an operator's task ID was refused (nothing changed). */
export type AdoptOutcome = string | { refused: string };

/** Whether two URLs are the same once serialised (WHATWG); unparsable ones compare as written. */
function sameUrl(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      return new URL(u).href;
    } catch {
      return u;
    }
  };
  return norm(a) === norm(b);
}

/**
 * Adopts a task ID an operator gave for a job in `unknown` (`resolve`), after checking it:
 * the task is not bound to another job of the same provider account (any entry reaching it);
 * the job's own credential can read it where the provider checks credentials (a refusal or a
 * `404` refuses it); and where the provider's record says what the task is for, that is this
 * job (our reference, or the URL). Returns the bound task ID or `{refused}` with the reason (also
 * when another task was recorded meanwhile, by a late answer); either way the attempt is in the
 * timeline (`operator_resolve`: who, when, the task and the evidence).
 */
export async function adoptTask(
  kit: ActivityKit,
  input: { jobId: string; taskId: string; by: string; trackingDeadlineMs?: number },
): Promise<AdoptOutcome> {
  const { store } = kit;
  const row = await store.jobs.get(input.jobId);
  if (!row) throw new Error(`job ${input.jobId} is not registered`);
  const audit = (outcome: string, evidence: Record<string, unknown>) =>
    store.findings.appendEvent(input.jobId, 'operator_resolve', row.state, {
      by: input.by,
      at: new Date().toISOString(),
      taskId: input.taskId,
      outcome,
      evidence,
    });
  if (row.task_id === input.taskId) {
    await audit('adopted', { recorded: row.task_id, note: 'the task a late answer recorded' });
    return row.task_id;
  }
  if (row.task_id) {
    // A late answer recorded another task meanwhile: the operator's choice is never silently replaced.
    await audit('refused', { recorded: row.task_id });
    return {
      refused: `a task (${row.task_id}) was recorded for this job meanwhile, by an answer that came late; resolve with that task, or not at all`,
    };
  }
  const resolved = kit.deps.providers.resolve(row.provider, row.account);
  const bound = await store.jobs.tasksBoundElsewhere({
    providerAccount: resolved.providerAccount,
    provider: row.provider,
    taskIds: [input.taskId],
    exceptJobId: input.jobId,
  });
  const other = bound.get(input.taskId);
  if (other) {
    const refused = `task ${input.taskId} is bound to another job (provider account ${resolved.providerAccount}); a task belongs to one job`;
    await audit('refused', { boundTo: other });
    return { refused };
  }
  let seen;
  try {
    seen = await kit.call(row.provider, row.account, (p) =>
      p.adapter.status(input.taskId, kit.taskCall(p, row, input.taskId)),
    );
  } catch (e) {
    if (!isProviderError(e) || !['not_found', 'permanent', 'expired', 'conflict'].includes(e.kind)) throw e;
    const refused = `the job's own credential cannot read task ${input.taskId} (${e.message})`;
    await audit('refused', { statusRead: e.toJobError() });
    return { refused };
  }
  const ref = providerKeys(row.account, row.idem_key).clientRef;
  const subject = seen.subject;
  // `clientRef: null`: the provider echoes our reference and this task carries none of ours.
  const mismatch =
    subject?.clientRef !== undefined && subject.clientRef !== ref
      ? `the provider's record of task ${input.taskId} carries ${subject.clientRef === null ? 'no client reference of ours' : 'another client reference'}, not this job's`
      : subject?.url && !sameUrl(subject.url, row.url)
        ? `task ${input.taskId} is for ${subject.url}, not this job's ${row.url}`
        : undefined;
  const evidence = {
    statusRead: { providerStatus: seen.providerStatus, state: seen.state },
    subject: subject ?? null,
    providerAccount: resolved.providerAccount,
  };
  if (mismatch) {
    await audit('refused', evidence);
    return { refused: mismatch };
  }
  const out = await store.jobs.bindTask({
    jobId: input.jobId,
    taskId: input.taskId,
    providerStatus: seen.providerStatus,
    source: `operator: ${input.by}`,
    trackingDeadlineMs: input.trackingDeadlineMs,
    providerAccount: resolved.providerAccount,
  });
  if (out.kind === 'collision') {
    await audit('refused', { ...evidence, boundTo: out.boundTo });
    return { refused: `task ${input.taskId} was bound to job ${out.boundTo} meanwhile; a task belongs to one job` };
  }
  if (out.kind === 'final') {
    await audit('refused', { ...evidence, state: out.state });
    return { refused: `the job is already ${out.state}; nothing is adopted` };
  }
  if (out.taskId !== input.taskId) {
    // A late answer bound its task while the operator's was being checked: never silently swapped.
    await audit('refused', { ...evidence, recorded: out.taskId });
    return {
      refused: `a task (${out.taskId}) was recorded for this job meanwhile, by an answer that came late; resolve with that task, or not at all`,
    };
  }
  await audit('adopted', evidence);
  return out.taskId;
}
