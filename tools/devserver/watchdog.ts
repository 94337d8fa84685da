/**
 * The watchdog of a dev server: the server must not outlive the Node process that started it.
 *
 * Each server gets a tiny watchdog: a second Node process (`process.execPath -e ...`) whose stdin
 * is a pipe from this process. When this process ends for any reason — normal exit, uncaught
 * exception, `SIGKILL`, OOM — the kernel closes the pipe, the watchdog sees EOF and sends the
 * server SIGTERM, then SIGKILL after the stop grace period. The watchdog ignores SIGINT/SIGHUP (a
 * Ctrl-C reaches the server itself anyway) and exits on its own once the server is gone. Residual
 * risk: if the server dies on its own and its PID is reused within the watchdog's 1 s poll before
 * this process dies, the watchdog could signal the wrong process; the dev server's `stop()` ends
 * the watchdog first-hand to avoid that window.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/**
 * The watchdog program (see the module comment). argv: server PID, grace period in ms.
 * Kept dependency-free and tiny; it runs as `node -e`.
 */
const WATCHDOG_JS = `
const pid = Number(process.argv[1]);
const graceMs = Number(process.argv[2]);
const alive = () => { try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
let killing = false;
const kill = () => {
  if (killing) return;
  killing = true;
  try { process.kill(pid, 'SIGTERM'); } catch { process.exit(0); }
  const deadline = Date.now() + graceMs;
  setInterval(() => {
    if (!alive()) process.exit(0);
    if (Date.now() > deadline) { try { process.kill(pid, 'SIGKILL'); } catch {} process.exit(0); }
  }, 100);
};
process.on('SIGINT', () => {});
process.on('SIGHUP', () => {});
process.stdin.on('end', kill);
process.stdin.on('close', kill);
process.stdin.on('error', kill);
process.stdin.resume();
setInterval(() => { if (!killing && !alive()) process.exit(0); }, 1000);
`;

/** Starts the watchdog of the server process `pid` (grace period `graceMs` ms between SIGTERM and SIGKILL); it is `unref`'d. */
export function startWatchdog(pid: number, graceMs: number): ChildProcess {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  const w = spawn(process.execPath, ['-e', WATCHDOG_JS, String(pid), String(graceMs)], {
    stdio: ['pipe', 'ignore', 'ignore'],
    env,
    windowsHide: true,
  });
  w.on('error', () => undefined);
  unrefChild(w);
  return w;
}

/** Lets the event loop exit while the child (and its pipes) are still running. */
export function unrefChild(child: ChildProcess): void {
  child.unref();
  for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void } | null)?.unref?.();
}
