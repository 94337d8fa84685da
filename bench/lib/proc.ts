/**
 * Process figures read from the OS (Linux `/proc`), so that the worker, the Temporal server and
 * the benchmark process (simulator + driver) are measured separately and the same way.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

let ticks: number | undefined;

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`, 100 on Linux x86-64). */
export function clockTicksPerSecond(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/**
 * CPU time (user + system) used so far by process `pid`, all its threads, in seconds; undefined
 * when the process is gone. Children's time is not included.
 */
export function cpuSeconds(pid: number): number | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may contain spaces: fields after the closing parenthesis.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return (utime + stime) / clockTicksPerSecond();
}

/** Fields after the command name of `/proc/<pid>/stat` (0-based from field 3, `state`); undefined when gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Every live process whose parent chain reaches one of `roots` (the roots included). */
export function processTree(roots: readonly number[]): number[] {
  const parent = new Map<number, number>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const f = statFields(Number(d));
    if (f) parent.set(Number(d), Number(f[1]));
  }
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid, hops = 0; p && hops < 64; p = parent.get(p), hops++)
      if (roots.includes(p)) return true;
    return false;
  };
  return [...parent.keys()].filter(inTree);
}

/**
 * CPU seconds (user + system) of the process trees under `roots` so far: each live member's own
 * time plus the time of its children that have exited and been reaped (`cutime`, `cstime`), so
 * short-lived children (PostgreSQL's per-connection backends) are counted too.
 */
export function treeCpuSeconds(roots: readonly number[]): number {
  let ticks = 0;
  for (const pid of processTree(roots)) {
    const f = statFields(pid);
    if (f) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  }
  return ticks / clockTicksPerSecond();
}

/** CPU seconds of a measured process (its tree when it has `roots`); undefined when gone. */
export function measuredCpuSeconds(p: Measured): number | undefined {
  return p.roots ? treeCpuSeconds(p.roots) : cpuSeconds(p.pid);
}

/** RSS of a measured process (summed over its tree when it has `roots`), bytes; undefined when gone. */
function measuredRssBytes(p: Measured): number | undefined {
  if (!p.roots) return memory(p.pid)?.rssBytes;
  return processTree(p.roots).reduce((sum, pid) => sum + (memory(pid)?.rssBytes ?? 0), 0);
}

/** Resident set size and its peak of process `pid`, in bytes (`VmRSS`, `VmHWM`); undefined when gone. */
export function memory(pid: number): { rssBytes: number; peakRssBytes: number } | undefined {
  let status: string;
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return { rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') };
}

/** A named process to measure. */
export interface Measured {
  name: string;
  pid: number;
  /** Measure the process trees under these PIDs instead (an external Temporal cluster and its PostgreSQL). */
  roots?: readonly number[];
}

/** CPU seconds of each process at one moment (see {@link cpuSeconds}). */
export type CpuSnapshot = Record<string, number>;

/** Reads {@link cpuSeconds} of every process; a process that is gone reads as NaN. */
export function cpuSnapshot(procs: readonly Measured[]): CpuSnapshot {
  return Object.fromEntries(procs.map((p) => [p.name, measuredCpuSeconds(p) ?? Number.NaN]));
}

/** CPU seconds used between two snapshots, per process. */
export function cpuDelta(before: CpuSnapshot, after: CpuSnapshot): CpuSnapshot {
  return Object.fromEntries(
    Object.keys(before).map((k) => [k, round((after[k] ?? Number.NaN) - (before[k] ?? Number.NaN), 3)]),
  );
}

/** Rounds `x` to `digits` decimals. */
export function round(x: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Bytes → MiB, rounded to 1 decimal. */
export function mib(bytes: number): number {
  return round(bytes / 1024 / 1024, 1);
}

/**
 * Samples RSS of every process every `everyMs` ms until stopped. Returns the maximum RSS seen per
 * process and the last sample, in bytes.
 */
export function sampleMemory(
  procs: readonly Measured[],
  everyMs = 1_000,
): { stop(): { maxRssBytes: Record<string, number>; lastRssBytes: Record<string, number> } } {
  const max: Record<string, number> = {};
  const last: Record<string, number> = {};
  const tick = () => {
    for (const p of procs) {
      const rss = measuredRssBytes(p);
      if (rss === undefined) continue;
      last[p.name] = rss;
      max[p.name] = Math.max(max[p.name] ?? 0, rss);
    }
  };
  tick();
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      tick();
      return { maxRssBytes: { ...max }, lastRssBytes: { ...last } };
    },
  };
}

/** CPU seconds the whole machine has spent busy (all cores: user, nice, system, irq, softirq, steal) since boot. */
export function machineBusySeconds(): number {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
  return busy / clockTicksPerSecond();
}

/**
 * Measures the CPU used by processes other than `procs()` (other people's tests, a chaos run)
 * while a benchmark runs: machine busy time minus the benchmark's own processes, in cores.
 * `procs` is called at start and stop so that workers started in between are counted.
 */
export function sampleForeignCpu(procs: () => readonly Measured[]): {
  stop(): { foreignCores: number; ownCores: number; wallS: number };
} {
  const t0 = Date.now();
  const busy0 = machineBusySeconds();
  const own0 = new Map(procs().map((p) => [p.pid, measuredCpuSeconds(p) ?? 0]));
  return {
    stop() {
      const wallS = (Date.now() - t0) / 1000;
      const busy = machineBusySeconds() - busy0;
      let own = 0;
      for (const p of procs()) own += (measuredCpuSeconds(p) ?? 0) - (own0.get(p.pid) ?? 0);
      return {
        foreignCores: round(Math.max(0, busy - own) / wallS, 2),
        ownCores: round(own / wallS, 2),
        wallS: round(wallS, 1),
      };
    },
  };
}
