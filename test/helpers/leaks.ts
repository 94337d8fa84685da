/**
 * Where secrets could leak, as text to search: a workflow's whole history with every payload
 * decoded (payloads are base64 in `temporal workflow show -o json`, so a plain grep finds nothing),
 * and everything the store keeps of a job. Used by the secret-leak checks of the tests.
 */
import type { Client } from '@temporalio/client';
import type { Store } from '../../src/store/index.js';

/** Every string and every payload (bytes, decoded as UTF-8) of a workflow's history, as one text. */
export async function historyText(temporal: Client, workflowId: string): Promise<string> {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  const parts: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') parts.push(v);
    else if (v instanceof Uint8Array) parts.push(Buffer.from(v).toString('utf8'));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(history);
  return parts.join('\n');
}

/** Everything the store keeps of a job (row, timeline, incidents, result and its documents), as one text. */
export async function storeText(store: Store, jobId: string): Promise<string> {
  return [
    JSON.stringify(await store.jobs.get(jobId)),
    JSON.stringify(await store.findings.timeline(jobId)),
    JSON.stringify(await store.findings.incidents(jobId)),
    JSON.stringify(await store.results.forJob(jobId)),
    JSON.stringify((await store.results.documents(jobId, { offset: 0, limit: 100_000 })).documents),
  ].join('\n');
}

/** The secrets (as given, and their base64 forms) found in `text`. */
export function secretsIn(text: string, secrets: readonly string[]): string[] {
  return secrets
    .flatMap((s) => [s, Buffer.from(s).toString('base64')])
    .filter((s) => s.length >= 4 && text.includes(s));
}
