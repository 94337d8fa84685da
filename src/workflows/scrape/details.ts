/**
 * The Web UI's "Current details" of a scrape job: short markdown lines, the most useful first
 * (state and provider status, then the task, then timing, then what went wrong), so that the panel
 * never hides what an operator needs when it cuts off its last lines.
 */
import { setCurrentDetails } from '@temporalio/workflow';
import type { JobView } from '../../model/types.js';

const MAX_LINE = 160;

/** What each wait reason waits for, as the details say it. */
const WAITING_FOR: Record<NonNullable<JobView['waiting']>['reason'], string> = {
  slot: 'a free slot',
  cooldown: 'a cool-down',
  credential: 'a credential',
  operator: 'an operator',
  budget: 'its budget',
  evidence: 'the provider’s lookups',
  resubmit: 'a resubmit',
};

/** Renders `view` into the workflow's current details. */
export function renderDetails(view: JobView): void {
  const lines: string[] = [];
  const provider = view.providerStatus
    ? ` · provider: ${view.providerState === 'unrecognised' ? `unrecognised status "${view.providerStatus}"` : view.providerStatus}`
    : '';
  lines.push(`**State:** ${view.state}${provider}`);
  if (view.waiting)
    lines.push(
      `**Waiting for ${WAITING_FOR[view.waiting.reason]}:** ${view.waiting.message}${view.waiting.until ? ` (next try ${view.waiting.until})` : ''}`,
    );
  if (view.cancel) {
    lines.push(
      `**Cancel:** via ${view.cancel.via} by ${view.cancel.requestedBy} (${view.cancel.reason}); outcome: ${view.cancel.outcome ?? 'in progress'}; provider cancel calls: ${view.cancel.providerCancelCalls}`,
    );
  }
  if (view.lastError)
    lines.push(`**Last error:** ${view.lastError.code ?? view.lastError.kind}: ${view.lastError.message}`);
  if (view.note) lines.push(`**Note:** ${view.note}`);
  lines.push(`**Task:** ${view.taskId ?? '— (not submitted yet)'} · checks: ${view.statusChecks}`);
  if (view.nextCheckAt && view.state === 'pending')
    lines.push(`**Next check:** ${view.nextCheckAt} (see the pending activity for the live count)`);
  if (view.deadlineAt) lines.push(`**Deadline:** ${view.deadlineAt}`);
  if (view.result)
    lines.push(
      `**Result:** ${view.result.title ?? '(no title)'} · HTTP ${view.result.httpStatus ?? '—'} · ${view.result.resultId}`,
    );
  if (view.cancel?.detail) lines.push(`**Cancel detail:** ${view.cancel.detail}`);
  lines.push(`**URL:** ${view.url}`);
  setCurrentDetails(lines.map((l) => (l.length > MAX_LINE ? `${l.slice(0, MAX_LINE - 1)}…` : l)).join('\n\n'));
}
