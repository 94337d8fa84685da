/**
 * Reading a Prometheus text exposition (version 0.0.4: `name{label="value",…} value` lines): the
 * dev server's own metrics and the Temporal SDK worker's (Core's Prometheus exporter). Counters
 * and histograms are cumulative, so every figure is the difference of two scrapes.
 *
 * Parsed here rather than with a library: the npm text-format parser that was tried
 * (`parse-prometheus-text-format` 1.1.1) merged the dev server's labelled histogram series into one
 * unlabelled series, losing exactly the labels these figures are selected by.
 */

/** One sample line: metric name (with its `_bucket`/`_sum`/`_count` suffix), labels, value. */
export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** A label filter: every given label must equal (string) or match (RegExp) the sample's. */
export type LabelFilter = Readonly<Record<string, string | RegExp>>;

const LINE = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses an exposition text into samples (comments and malformed lines skipped; `NaN`/`+Inf` values kept as numbers). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    if (m[2])
      for (const l of m[2].matchAll(LABEL))
        labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_s, c: string) => (c === 'n' ? '\n' : c));
    const value = Number(m[3]);
    out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/**
 * Fetches and parses `url` (timeout 15 s). Resolves undefined when it cannot be read (no metrics
 * endpoint, a server already gone): a figure that needs it is then reported as unavailable.
 */
export async function scrape(url: string | undefined): Promise<Sample[] | undefined> {
  if (!url) return undefined;
  const t0 = Date.now();
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
    if (!res.ok) {
      console.error(`metrics ${url}: HTTP ${res.status}`);
      return undefined;
    }
    return parseExposition(await res.text());
  } catch (e) {
    console.error(
      `metrics ${url}: unreadable after ${Date.now() - t0} ms (${e instanceof Error ? e.message : String(e)})`,
    );
    return undefined;
  }
}

function matches(s: Sample, filter: LabelFilter): boolean {
  for (const [k, v] of Object.entries(filter)) {
    const have = s.labels[k];
    if (have === undefined) return false;
    if (typeof v === 'string' ? have !== v : !v.test(have)) return false;
  }
  return true;
}

/** Samples named `name` whose labels pass `filter`. */
export function select(samples: readonly Sample[], name: string, filter: LabelFilter = {}): Sample[] {
  return samples.filter((s) => s.name === name && matches(s, filter));
}

/** Sum of the samples named `name` passing `filter` (0 when none). */
export function total(samples: readonly Sample[] | undefined, name: string, filter: LabelFilter = {}): number {
  if (!samples) return 0;
  return select(samples, name, filter).reduce((s, x) => s + (Number.isFinite(x.value) ? x.value : 0), 0);
}

/** Sum by the value of `label` of the samples named `name` passing `filter`. */
export function totalBy(
  samples: readonly Sample[] | undefined,
  name: string,
  label: string,
  filter: LabelFilter = {},
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples ? select(samples, name, filter) : []) {
    const k = s.labels[label] ?? '';
    out[k] = (out[k] ?? 0) + (Number.isFinite(s.value) ? s.value : 0);
  }
  return out;
}

/** `after − before` of every key (keys of `after`; a key absent before counts from 0). */
export function deltaBy(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** A histogram summed over the series that pass a filter: cumulative bucket counts by upper bound, sum and count (units as exported). */
export interface Histogram {
  /** Upper bound → cumulative count, ascending; the last bound is `+Inf`. */
  buckets: [number, number][];
  sum: number;
  count: number;
}

/**
 * The histogram `base` (its `base_bucket`, `base_sum`, `base_count` samples) summed over every
 * series passing `filter`; undefined when there is none.
 */
export function histogram(
  samples: readonly Sample[] | undefined,
  base: string,
  filter: LabelFilter = {},
): Histogram | undefined {
  if (!samples) return undefined;
  const bucketSamples = select(samples, `${base}_bucket`, filter);
  if (bucketSamples.length === 0) return undefined;
  const byLe = new Map<number, number>();
  for (const s of bucketSamples) {
    const le = s.labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(s.labels.le);
    if (Number.isNaN(le)) continue;
    byLe.set(le, (byLe.get(le) ?? 0) + s.value);
  }
  return {
    buckets: [...byLe.entries()].sort((a, b) => a[0] - b[0]),
    sum: total(samples, `${base}_sum`, filter),
    count: total(samples, `${base}_count`, filter),
  };
}

/** What `after` recorded since `before` (before undefined: all of `after`). */
export function histogramDelta(before: Histogram | undefined, after: Histogram | undefined): Histogram | undefined {
  if (!after) return undefined;
  if (!before) return after;
  const prev = new Map(before.buckets);
  return {
    buckets: after.buckets.map(([le, c]) => [le, c - (prev.get(le) ?? 0)]),
    sum: after.sum - before.sum,
    count: after.count - before.count,
  };
}

/**
 * Quantile `q` (0..1) of a histogram, interpolated linearly inside the bucket it falls in (as
 * PromQL's `histogram_quantile`); the highest finite bound when it falls in the `+Inf` bucket;
 * NaN when the histogram is empty. Units are the histogram's.
 */
export function quantile(h: Histogram | undefined, q: number): number {
  if (!h || h.count <= 0 || h.buckets.length === 0) return Number.NaN;
  const rank = q * (h.buckets.at(-1)![1] || h.count);
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, c] of h.buckets) {
    if (c >= rank) {
      if (!Number.isFinite(le)) return prevLe;
      if (c === prevCount) return le;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / (c - prevCount);
    }
    prevLe = le;
    prevCount = c;
  }
  return prevLe;
}

/** Summary of a histogram delta in milliseconds: count, mean, p50, p99 (`unitMs`: milliseconds per exported unit, 1000 for seconds). */
export function latencySummaryMs(
  h: Histogram | undefined,
  unitMs: number,
): { count: number; meanMs: number; p50Ms: number; p99Ms: number } | null {
  if (!h || h.count <= 0) return null;
  const r = (x: number) => Math.round(x * unitMs * 10) / 10;
  return { count: h.count, meanMs: r(h.sum / h.count), p50Ms: r(quantile(h, 0.5)), p99Ms: r(quantile(h, 0.99)) };
}
