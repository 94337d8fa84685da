/**
 * JSON-line logs for the worker process: the SDK runtime's logger (workflow and activity logs,
 * Core's own) writes one JSON object per line — `{"at","level","message",…meta}` — to a file or
 * stderr. Activity task tokens never appear (the meta keys are dropped); secret-named fields and
 * `Bearer`/`Basic` credentials are redacted, URLs sanitised (`src/lib/sanitize.ts`).
 * The HTTP API and the codec server log JSON through Fastify's pino logger.
 */
import fs from 'node:fs';
import {
  DefaultLogger,
  Runtime,
  makeTelemetryFilterString,
  type LogEntry,
  type LogLevel,
  type Logger,
} from '@temporalio/worker';
import { REDACTED, redactSecrets, sanitizeBody } from '../lib/sanitize.js';

const TASK_TOKEN_KEY = /^(base64)?_?task_?token$/i;

/** One log entry as the JSON object we write (task tokens dropped, secrets redacted). */
export function logRecord(
  entry: Pick<LogEntry, 'level' | 'message' | 'meta' | 'timestampNanos'>,
): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(entry.meta ?? {})) if (!TASK_TOKEN_KEY.test(k)) meta[k] = plainError(v);
  const message = redactSecrets(entry.message).replace(/(task_?token=)?TaskToken\([^)]*\)/gi, REDACTED);
  return {
    at: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(),
    level: entry.level,
    message,
    ...(sanitizeBody(meta) as Record<string, unknown>),
  };
}

/** An Error as a JSON-able object (its message, code, type and cause are not enumerable properties). */
function plainError(v: unknown, depth = 0): unknown {
  if (!(v instanceof Error)) return v;
  const e = v as Error & { code?: unknown; type?: unknown; failure?: unknown };
  return {
    name: e.name,
    message: e.message,
    ...(e.code !== undefined ? { code: String(e.code) } : {}),
    ...(typeof e.type === 'string' ? { type: e.type } : {}),
    ...(e.stack ? { stack: e.stack.split('\n').slice(0, 8).join('\n') } : {}),
    ...(e.cause !== undefined && depth < 4 ? { cause: plainError(e.cause, depth + 1) } : {}),
  };
}

/** A logger writing {@link logRecord} JSON lines to `file` (appended) or stderr. */
function jsonLineLogger(level: LogLevel, file?: string): Logger {
  return new DefaultLogger(level, (entry) => {
    const line = `${JSON.stringify(logRecord(entry), (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`;
    if (file) fs.appendFileSync(file, line);
    else process.stderr.write(line);
  });
}

let installed = false;

/**
 * Installs the SDK runtime once per process (before any worker or native connection exists):
 * the JSON-line logger at `level` (Core's own warnings forwarded to it), and when `sdkMetricsAddress` is given the Core Prometheus
 * exporter on it (`host:port`; `/metrics` there, counters with `_total`, durations in seconds).
 * Returns false when a runtime was already installed (the call then changes nothing).
 */
export function installWorkerRuntime(
  opts: { level?: LogLevel; file?: string; sdkMetricsAddress?: string } = {},
): boolean {
  if (installed) return false;
  installed = true;
  Runtime.install({
    logger: jsonLineLogger(opts.level ?? 'INFO', opts.file),
    telemetryOptions: {
      // The native side's own logs (Core) go through the same JSON logger instead of the console.
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      ...(opts.sdkMetricsAddress
        ? {
            metrics: {
              prometheus: {
                bindAddress: opts.sdkMetricsAddress,
                countersTotalSuffix: true,
                unitSuffix: true,
                useSecondsForDurations: true,
              },
            },
          }
        : {}),
    },
  });
  return true;
}

/** Maps a config log level (`info`) to the SDK's (`INFO`). */
export function sdkLogLevel(level: 'trace' | 'debug' | 'info' | 'warn' | 'error'): LogLevel {
  return level.toUpperCase() as LogLevel;
}
