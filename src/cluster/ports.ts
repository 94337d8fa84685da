/** Free-port lookup for the topology (bind port 0, close; the caller uses it at once). */
import net from 'node:net';

/** A free TCP port on `ip`, not in `avoid`. @throws Error after 20 tries. */
export async function freePortOn(ip: string, avoid: readonly number[] = []): Promise<number> {
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
