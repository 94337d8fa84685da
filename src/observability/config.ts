/**
 * The `observability` section of the configuration: where `/metrics` listens, where traces go,
 * the log level. Every field has a default; metrics and traces are off unless configured.
 * Environment overrides: `SCRAPE_WORKER_METRICS_PORT`, `SCRAPE_API_METRICS_PORT`,
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`) or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
 * `OTEL_SERVICE_NAME`, `SCRAPE_LOG_LEVEL`.
 */
import { z } from 'zod';

const Port = z.number().int().min(0).max(65_535);

export const ObservabilityConfigSchema = z
  .object({
    metrics: z
      .object({
        /** Listen address of the `/metrics` endpoints (default loopback only). */
        host: z.string().min(1).default('127.0.0.1'),
        /** The worker's `/metrics` (our series and the SDK runtime's); null: off; 0: any free port. */
        workerPort: Port.nullable().default(null),
        /** The HTTP API's `/metrics`, on a listener of its own; null: off; 0: any free port. */
        apiPort: Port.nullable().default(null),
      })
      .strict()
      .prefault({}),
    traces: z
      .object({
        /** OTLP/HTTP traces endpoint, e.g. `http://otel-collector:4318/v1/traces`; absent: no export. */
        otlpEndpoint: z.url().optional(),
        /** `service.name` of the spans (a suffix `-worker` / `-api` names the process kind). */
        serviceName: z.string().min(1).default('scrape-orchestrator'),
      })
      .strict()
      .prefault({}),
    logs: z
      .object({
        /** Lowest level written (JSON lines). */
        level: z.enum(['trace', 'debug', 'info', 'warn', 'error']).default('info'),
      })
      .strict()
      .prefault({}),
  })
  .strict();
/** The parsed `observability` section. */
export type ObservabilityConfig = z.infer<typeof ObservabilityConfigSchema>;

/** Applies the environment overrides (see the module doc) to a parsed section, in place. */
export function applyObservabilityEnv(c: ObservabilityConfig, env: NodeJS.ProcessEnv): void {
  const port = (name: string) => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    if (v === 'off') return null;
    const n = Port.safeParse(Number(v));
    if (!n.success) throw new Error(`${name}=${v}: a port 0-65535 or "off"`);
    return n.data;
  };
  const w = port('SCRAPE_WORKER_METRICS_PORT');
  if (w !== undefined) c.metrics.workerPort = w;
  const a = port('SCRAPE_API_METRICS_PORT');
  if (a !== undefined) c.metrics.apiPort = a;
  const traces =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ||
    (env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/$/, '')}/v1/traces` : undefined);
  if (traces) c.traces.otlpEndpoint = z.url().parse(traces);
  if (env.OTEL_SERVICE_NAME) c.traces.serviceName = env.OTEL_SERVICE_NAME;
  if (env.SCRAPE_LOG_LEVEL)
    c.logs.level = z.enum(['trace', 'debug', 'info', 'warn', 'error']).parse(env.SCRAPE_LOG_LEVEL);
}
