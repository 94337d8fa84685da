/**
 * The dev server's own Prometheus metrics (`temporal server start-dev` prints `Metrics: <url>`):
 * persistence operations and their latency, read before and after a phase. This is how the
 * benchmarks show what limits the server: its SQLite persistence serialises writes.
 */
import type { Stack } from './stack.js';
import { round } from './proc.js';

/** Persistence operation → count and total latency (s), cumulative since the server started. */
export type PersistenceSnapshot = Record<string, { count: number; sumS: number }>;

/** The metrics URL the dev server printed, if any. */
export function metricsUrl(stack: Stack): string | undefined {
  return /Metrics:\s+(http:\/\/\S+)/.exec(stack.temporal.devServer?.outputTail() ?? '')?.[1];
}

/** Reads `persistence_latency` (sum, count) per operation; undefined when no metrics endpoint. */
export async function persistenceSnapshot(stack: Stack): Promise<PersistenceSnapshot | undefined> {
  const url = metricsUrl(stack);
  if (!url) return undefined;
  let text: string;
  try {
    text = await (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();
  } catch {
    return undefined;
  }
  const out: PersistenceSnapshot = {};
  for (const line of text.split('\n')) {
    const m = /^persistence_latency_(sum|count)\{(.*)\} ([0-9.eE+-]+)$/.exec(line);
    if (!m) continue;
    const op = /operation="([^"]+)"/.exec(m[2]!)?.[1];
    if (!op) continue;
    const v = Number(m[3]);
    if (!Number.isFinite(v)) continue;
    const e = (out[op] ??= { count: 0, sumS: 0 });
    if (m[1] === 'sum') e.sumS += v;
    else e.count += v;
  }
  return out;
}

/** Persistence work between two snapshots: per operation count, total and mean latency, and totals. */
export function persistenceDelta(a: PersistenceSnapshot | undefined, b: PersistenceSnapshot | undefined): { totalS: number; operations: number; byOp: Record<string, { count: number; totalS: number; meanMs: number }> } | undefined {
  if (!a || !b) return undefined;
  const byOp: Record<string, { count: number; totalS: number; meanMs: number }> = {};
  let totalS = 0;
  let operations = 0;
  for (const [op, v] of Object.entries(b)) {
    const count = v.count - (a[op]?.count ?? 0);
    const s = v.sumS - (a[op]?.sumS ?? 0);
    if (count <= 0) continue;
    byOp[op] = { count, totalS: round(s, 2), meanMs: round((s / count) * 1000, 2) };
    totalS += s;
    operations += count;
  }
  const sorted = Object.fromEntries(Object.entries(byOp).sort((x, y) => y[1].totalS - x[1].totalS));
  return { totalS: round(totalS, 2), operations, byOp: sorted };
}
