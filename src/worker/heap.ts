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

/**
 * This thread's old generation, bytes: what was live in it after the last major collection (the
 * heap in use at any other moment counts garbage not yet collected) and its limit: the process's
 * `--max-old-space-size` where it was given one (V8's `heap_size_limit` adds the young
 * generation's reserve, which Node sizes from the machine's memory and which never fills with
 * waiting loops), else `heap_size_limit`.
 */
export function oldGenerationHeap(): { used: number; limit: number } {
  gcWatch ??= watchMajorGc();
  const given = maxOldSpaceMiB();
  return { used: liveAfterGc, limit: given ? given * 2 ** 20 : getHeapStatistics().heap_size_limit };
}

/** `--max-old-space-size` (MiB) as the process was given it: its command line wins over `NODE_OPTIONS`, as in Node. */
function maxOldSpaceMiB(): number | undefined {
  const flags = [...(process.env.NODE_OPTIONS ?? '').split(/\s+/), ...process.execArgv];
  const given = flags
    .map((f) => /^--max[-_]old[-_]space[-_]size=(\d+)$/.exec(f)?.[1])
    .filter((v) => v !== undefined)
    .pop();
  return given ? Number(given) : undefined;
}

/** Whether a V8 heap space belongs to the old generation (everything but the young generation and read-only space). */
const inOldGeneration = (space: string) => !space.startsWith('new_') && space !== 'read_only_space';

/** Keeps {@link liveAfterGc} current: after every major collection, the old generation then in use. */
function watchMajorGc(): PerformanceObserver {
  const major = (e: PerformanceEntry) =>
    (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR;
  const watch = new PerformanceObserver((list) => {
    if (list.getEntries().some(major))
      liveAfterGc = getHeapSpaceStatistics()
        .filter((s) => inOldGeneration(s.space_name))
        .reduce((sum, s) => sum + s.space_used_size, 0);
  });
  watch.observe({ entryTypes: ['gc'] });
  return watch;
}
