/**
 * `/metrics` endpoints: a small listener of its own (never the API's public port) serving the
 * process's registry (`metrics.ts`), plus, on the worker, the SDK runtime's series read from the
 * Core Prometheus exporter on loopback and appended (one scrape target per process).
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { BudgetUsage } from '../model/budgets.js';
import { registry, setBudgetSource, setJobCountSource } from './metrics.js';

/** A listening metrics endpoint. */
export interface MetricsServer {
  app: FastifyInstance;
  /** `http://host:port` (scrape `${url}/metrics`). */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` on `host:port` (0: any free port).
 * @param sdkMetricsUrl the SDK runtime's Prometheus endpoint to append (worker only)
 * @throws Error when the port is taken
 */
export async function startMetricsServer(opts: {
  host: string;
  port: number;
  sdkMetricsUrl?: string;
}): Promise<MetricsServer> {
  const app = Fastify({ logger: false });
  app.get('/metrics', async (_req, reply) => {
    let text = await registry.metrics();
    if (opts.sdkMetricsUrl) {
      const sdk = await fetch(opts.sdkMetricsUrl, { signal: AbortSignal.timeout(5_000) }).then(
        (r) => (r.ok ? r.text() : `# SDK runtime metrics unavailable: HTTP ${r.status}\n`),
        (e: Error) => `# SDK runtime metrics unavailable: ${e.message}\n`,
      );
      text += `\n${sdk}`;
    }
    return reply.type(registry.contentType).send(text);
  });
  await app.listen({ host: opts.host, port: opts.port });
  const port = (app.server.address() as { port: number }).port;
  return { app, port, url: `http://${opts.host}:${port}`, close: () => app.close() };
}

/** Where the job counts come from: the store's jobs (`store.jobs`) satisfy it (observability never imports the store). */
export interface JobCounts {
  /** The number of jobs in each state (states with no job may be absent). */
  countByState(): Promise<Record<string, number>>;
}

/** Where the budget gauges read: the store's budgets (`store.budgets`) satisfy it. */
export interface BudgetReadings {
  /** Every budget with its standing in the current period. */
  list(): Promise<BudgetUsage[]>;
}

/**
 * Lets `scrape_jobs{state}` count the jobs of `source` (`store.jobs`) by state at scrape time, and
 * the budget gauges read `budgets` (`store.budgets`), when given.
 */
export function countJobsFrom(source: JobCounts, budgets?: BudgetReadings): void {
  setJobCountSource(() => source.countByState());
  if (budgets) setBudgetSource(() => budgets.list());
}
