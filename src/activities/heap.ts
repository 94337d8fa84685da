/**
 * What a worker's heap holds, for the tracker's admission of further waiting jobs: the old
 * generation as live after the last major garbage collection, against the limit
 * `--max-old-space-size` sets.
 */
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

/** Bytes of this thread's old generation in use right after its last major garbage collection (0 before any). */
let liveAfterGc = 0;
let gcWatch: PerformanceObserver | undefined;

/** The V8 heap spaces whose sum `--max-old-space-size` limits (the young generation is not among them). */
const OLD_GENERATION = new Set(['old_space', 'code_space', 'large_object_space', 'code_large_object_space']);
/** V8's default largest semi-space on 64-bit hosts (MiB): the young generation reserves three of them. */
const DEFAULT_SEMI_SPACE_MIB = 16;

/**
 * This thread's old generation, bytes: what was live in it after the last major collection (the
 * heap in use at any other moment counts garbage not yet collected) and its limit. V8's
 * `heap_size_limit` adds the young generation's reserve (three semi-spaces: 48 MiB by default) to
 * `--max-old-space-size`, and that reserve never fills with waiting loops, so it is taken off.
 */
export function oldGenerationHeap(): { used: number; limit: number } {
  gcWatch ??= watchMajorGc();
  return { used: liveAfterGc, limit: getHeapStatistics().heap_size_limit - 3 * semiSpaceMiB() * 2 ** 20 };
}

/** The largest semi-space (MiB): `--max-semi-space-size` where the process was given it, else V8's default. */
function semiSpaceMiB(): number {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  const given = flags
    .map((f) => /^--max[-_]semi[-_]space[-_]size=(\d+)$/.exec(f)?.[1])
    .filter((v) => v !== undefined)
    .pop();
  return given ? Number(given) : DEFAULT_SEMI_SPACE_MIB;
}

/** Keeps {@link liveAfterGc} current: after every major collection, the old generation then in use. */
function watchMajorGc(): PerformanceObserver {
  const major = (e: PerformanceEntry) =>
    (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
  const watch = new PerformanceObserver((list) => {
    if (list.getEntries().some(major))
      liveAfterGc = getHeapSpaceStatistics()
        .filter((s) => OLD_GENERATION.has(s.space_name))
        .reduce((sum, s) => sum + s.space_used_size, 0);
  });
  watch.observe({ entryTypes: ['gc'] });
  return watch;
}
