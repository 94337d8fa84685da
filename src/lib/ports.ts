/**
 * Free TCP ports on loopback or another local address, for the dev server, the demo, the cluster
 * topology and the tests: bind, read the port, close — the caller binds it at once (another process
 * may take it in between; callers that can retry do).
 */
import fs from 'node:fs';
import net from 'node:net';

/**
 * A free TCP port on `ip` (default loopback), not in `avoid`. Chosen at random below the OS's
 * ephemeral range where the OS says where that range is (Linux): a port in that range that is free
 * now can be handed a moment later, before the caller binds it, to any server that asks the OS for
 * a port (most test servers do) or to an outgoing connection. Elsewhere the OS chooses.
 * @throws Error when none is found.
 */
export async function freePort(ip = '127.0.0.1', avoid: readonly number[] = []): Promise<number> {
  const ephemeralFrom = firstEphemeralPort();
  if (ephemeralFrom !== undefined && ephemeralFrom > 11_000)
    return freePortInRange(ip, 10_000, ephemeralFrom - 1, avoid);
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

/** The last ports {@link freePortInRange} returned (and so {@link freePort}), newest last. */
const handedOut: number[] = [];

/** The first port of the OS's ephemeral range (Linux's `ip_local_port_range`), or undefined where it cannot be read. */
function firstEphemeralPort(): number | undefined {
  try {
    const first = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) ? first : undefined;
  } catch {
    return undefined;
  }
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
 * @throws RangeError for a range that holds no port; Error after 200 tries.
 */
export async function freePortInRange(
  ip: string,
  lo: number,
  hi: number,
  avoid: readonly number[] = [],
): Promise<number> {
  if (!(Number.isInteger(lo) && Number.isInteger(hi) && 0 < lo && lo <= hi && hi <= 65_535))
    throw new RangeError(`no port range from ${lo} to ${hi}: need 0 < lo <= hi <= 65535`);
  for (let i = 0; i < 200; i++) {
    const port = lo + Math.floor(Math.random() * (hi - lo + 1));
    // Not one this process handed out a moment ago and may not have bound yet.
    if (avoid.includes(port) || handedOut.includes(port) || !(await portIsFree(ip, port))) continue;
    handedOut.push(port);
    if (handedOut.length > 64) handedOut.shift();
    return port;
  }
  throw new Error(`no free port on ${ip} between ${lo} and ${hi}`);
}
