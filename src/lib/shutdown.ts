/**
 * Stopping a long-running command (`demo`, `worker`, `api`, `cluster`, `devserver`, the codec
 * server) on the first Ctrl-C or SIGTERM, the same way everywhere:
 *
 * - the first SIGINT or SIGTERM aborts {@link ShutdownSignals.signal}: the command stops what it
 *   started, in its own order, and returns;
 * - a second one ends the process at once (exit 130), for a stop that is itself stuck;
 * - once the command says everything is stopped ({@link ShutdownSignals.stopped}), the process must
 *   end by itself: if something left open still keeps it alive a few seconds later, the kinds of
 *   resources still open are printed and the process exits 1, so that such a leak is reported
 *   (and fails the tests that send the signal) instead of leaving a process that never exits.
 */

/** The signals that stop a command. */
const SHUTDOWN_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM'];

/** Exit code of a process ended by a second signal (128 + SIGINT, what a shell reports for Ctrl-C). */
export const FORCED_EXIT_CODE = 130;

/** Options of {@link watchShutdownSignals}. */
export interface ShutdownOptions {
  /** The command's name, for the lines it prints (default `scrape`). */
  name?: string;
  /** Where those lines go (default stderr). */
  log?: (line: string) => void;
  /** How long the process may stay alive after {@link ShutdownSignals.stopped}, ms (default 3000). */
  lingerMs?: number;
}

/** What {@link watchShutdownSignals} returns. */
export interface ShutdownSignals {
  /** Aborted on the first SIGINT or SIGTERM; its `reason` is the signal's name. */
  readonly signal: AbortSignal;
  /** Settles with the first signal's name. */
  readonly received: Promise<NodeJS.Signals>;
  /**
   * To be called once everything the command started is stopped: removes the listeners (a signal
   * from now on has its default effect) and arms the check for a process kept alive by a leftover.
   * With `exitNow` (a start-up cut short by the signal, whose work in flight was abandoned: a
   * server still starting is ended by its watchdog when this process exits), the process exits
   * with that code as soon as the current callbacks have run, instead.
   */
  stopped(opts?: { exitNow?: number }): void;
}

/**
 * Listens for SIGINT and SIGTERM until {@link ShutdownSignals.stopped} is called (see the module
 * documentation). Listeners are added with `process.on`, so another listener of the same signal
 * (the Temporal SDK's runtime, which shuts its workers down on it) still runs.
 */
export function watchShutdownSignals(opts: ShutdownOptions = {}): ShutdownSignals {
  const name = opts.name ?? 'scrape';
  const log = opts.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const controller = new AbortController();
  let resolveReceived!: (s: NodeJS.Signals) => void;
  const received = new Promise<NodeJS.Signals>((r) => (resolveReceived = r));
  const onSignal = (sig: NodeJS.Signals) => {
    if (!controller.signal.aborted) {
      controller.abort(sig);
      resolveReceived(sig);
      return;
    }
    log(`${name}: ${sig} again while stopping: exiting now`);
    process.exit(FORCED_EXIT_CODE);
  };
  for (const s of SHUTDOWN_SIGNALS) process.on(s, onSignal);
  let done = false;
  return {
    signal: controller.signal,
    received,
    stopped(stopOpts = {}) {
      if (done) return;
      done = true;
      for (const s of SHUTDOWN_SIGNALS) process.off(s, onSignal);
      if (stopOpts.exitNow !== undefined) {
        const code = stopOpts.exitNow;
        setImmediate(() => process.exit(code));
        return;
      }
      const lingerMs = opts.lingerMs ?? 3_000;
      // Unref'd: it fires only if something else still keeps the event loop alive.
      setTimeout(() => {
        log(
          `${name}: still running ${lingerMs} ms after everything was stopped; open: ${process.getActiveResourcesInfo().join(', ') || '(nothing Node reports)'}; exiting`,
        );
        process.exit(1);
      }, lingerMs).unref();
    },
  };
}

/** Thrown by {@link abortable} when the shutdown signal came first. */
export class ShutdownRequested extends Error {
  constructor(readonly signalName: string) {
    super(`stopped by ${signalName}`);
    this.name = 'ShutdownRequested';
  }
}

/**
 * Waits for `work`, or rejects with {@link ShutdownRequested} as soon as `signal` is aborted.
 * `work` goes on in the background then: `lateCleanup` receives its value if it still resolves
 * (a server that finished starting after the signal is stopped that way); a later rejection is
 * ignored.
 */
export async function abortable<T>(
  work: Promise<T>,
  signal: AbortSignal,
  lateCleanup?: (value: T) => unknown,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const onAbort = () => {
      if (settled) return;
      settled = true;
      reject(new ShutdownRequested(String(signal.reason)));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) return void Promise.resolve(lateCleanup?.(v)).catch(() => undefined);
        settled = true;
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (settled) return;
        settled = true;
        reject(e);
      },
    );
  });
}
