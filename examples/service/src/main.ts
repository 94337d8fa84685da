/**
 * A small backend service on scrape-orchestrator's typed client package (`@scrape-orchestrator/client`,
 * its only dependency): it starts a scrape, awaits its result, then starts a second one and cancels
 * it, printing one JSON line per step.
 *
 * It needs workers running against the same Temporal cluster, task queue and result store
 * (`npm run demo -- --keep` in the repository gives all three: see the README there), and reads:
 *
 *   TEMPORAL_ADDRESS     Temporal frontend, host:port (TLS and API key: TEMPORAL_TLS_*, TEMPORAL_API_KEY)
 *   SCRAPE_STORE_URL     the result store the workers write: postgres://… (a sqlite:<file> store, as
 *                        the demo's, needs `npm install better-sqlite3` here first)
 *   SCRAPE_TASK_QUEUE    the workers' task queue (default scrapes)
 *   SCRAPE_ACCOUNT       the account the jobs belong to (default demo)
 *   TARGET_URL           the page to scrape
 *   CANCEL_URL           the page of the scrape that is cancelled (default TARGET_URL with ?cancel)
 *
 *   npm install && npm run build && npm start
 */
import { connectScrapeClient, JobNotFoundError, type JobResult } from '@scrape-orchestrator/client';

const account = process.env.SCRAPE_ACCOUNT || 'demo';
const target = process.env.TARGET_URL;
if (!target) {
  console.error('set TARGET_URL to the page to scrape');
  process.exit(2);
}
const cancelTarget = process.env.CANCEL_URL || `${target}${target.includes('?') ? '&' : '?'}cancel`;
const say = (step: string, data: Record<string, unknown>) => console.log(JSON.stringify({ step, ...data }));

const service = await connectScrapeClient({ taskQueue: process.env.SCRAPE_TASK_QUEUE || 'scrapes' });
try {
  // The key makes the request idempotent: running the service again returns the same job.
  const job = await service.client.startScrape({
    account,
    url: target,
    key: `example-${new URL(target).pathname.replace(/\W+/g, '-')}`,
  });
  say('started', { jobId: job.jobId, created: job.created });

  const done = await service.client.awaitResult(account, job.jobId, { timeoutMs: 120_000 });
  if (done.status !== 'done') throw new Error(`job ${job.jobId} still ${done.job.state} after 120 s`);
  say('finished', { jobId: job.jobId, state: done.job.state });
  if (done.job.state === 'completed') {
    const page: JobResult = await service.client.getResult(account, job.jobId);
    say('result', { jobId: job.jobId, title: page.title, httpStatus: page.httpStatus, links: page.links.length });
  }

  const second = await service.client.startScrape({ account, url: cancelTarget });
  say('started', { jobId: second.jobId, created: second.created });
  const cancel = await service.client.cancelScrape(account, second.jobId, {
    reason: 'no longer needed',
    requestedBy: 'example-service',
    timeoutMs: 60_000,
  });
  say('cancelled', {
    jobId: second.jobId,
    result: cancel.kind,
    ...(cancel.kind === 'observed' ? { outcome: cancel.report.outcome } : {}),
  });

  // Another account's job is reported exactly like a missing one.
  await service.client.getScrape(`${account}-other`, job.jobId).then(
    () => say('other-account', { found: true }),
    (e: unknown) => say('other-account', { found: false, notFound: e instanceof JobNotFoundError }),
  );
} finally {
  await service.close();
}
