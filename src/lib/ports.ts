/**
 * Free TCP ports on loopback or another local address, for the dev server, the demo, the cluster
 * topology and the tests: bind, read the port, close — the caller binds it at once (another process
 * may take it in between; callers that can retry do).
 */
import net from 'node:net';

/** A free TCP port on `ip` (default loopback) chosen by the OS, not in `avoid`. @throws Error after 20 tries. */
export async function freePort(ip = '127.0.0.1', avoid: readonly number[] = []): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.unref();
      srv.once('error', reject);
      srv.listen(0, ip, () => {
        const a = srv.address();
        srv.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
      });
    });
    if (!avoid.includes(port)) return port;
  }
  throw new Error(`could not find a free port on ${ip}`);
}

/** True when nothing listens on `ip:port`. */
export async function portIsFree(ip: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, ip, () => srv.close(() => resolve(true)));
  });
}

/**
 * A free TCP port on `ip` between `lo` and `hi` (inclusive), not in `avoid`, tried at random.
 * Temporal stores membership ports as SQL `smallint`, so they must stay below 32768 (the OS hands
 * out ephemeral ports above that).
 * @throws Error after 200 tries.
 */
export async function freePortInRange(
  ip: string,
  lo: number,
  hi: number,
  avoid: readonly number[] = [],
): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = lo + Math.floor(Math.random() * (hi - lo + 1));
    if (!avoid.includes(port) && (await portIsFree(ip, port))) return port;
  }
  throw new Error(`no free port on ${ip} between ${lo} and ${hi}`);
}
