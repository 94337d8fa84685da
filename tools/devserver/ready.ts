/**
 * When a dev server just spawned is ready to use: its frontend answers, its namespace exists and
 * its custom search attributes are registered (the CLI registers them asynchronously at start-up).
 */
import { Connection } from '@temporalio/client';

/** The server process ended before it was ready (the caller reads its output for the reason). */
export class EarlyExitError extends Error {}

/**
 * Resolves once the frontend at `p.address` answers `GetSystemInfo` and `DescribeNamespace(namespace)`
 * and lists every name of `searchAttributes`, trying every 150 ms (each RPC bounded by 2 s).
 *
 * @throws EarlyExitError as soon as `p.exited` settles (the server process ended).
 * @throws Error naming the last failure when not ready within `p.timeoutMs` ms.
 */
export async function waitUntilReady(p: {
  address: string;
  namespace: string;
  searchAttributes: string[];
  timeoutMs: number;
  /** Settles when the server process ends. */
  exited: Promise<unknown>;
}): Promise<void> {
  const deadline = Date.now() + p.timeoutMs;
  let gone = false;
  const exitedFlag = p.exited.then(() => {
    gone = true;
  });
  let last = 'no attempt yet';
  while (Date.now() < deadline) {
    if (gone) throw new EarlyExitError('exited');
    // An attempt ends as soon as the server exits (a port taken by another process makes it exit
    // at once, while the attempt may be talking to that process) and never runs past its bound.
    let bound: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      attempt(p).then(
        () => 'ready' as const,
        (err: Error) => {
          last = err.message;
          return 'not yet' as const;
        },
      ),
      exitedFlag.then(() => 'exited' as const),
      new Promise<'not yet'>((resolve) => {
        bound = setTimeout(() => {
          last = `no answer within ${ATTEMPT_MS} ms`;
          resolve('not yet');
        }, ATTEMPT_MS);
      }),
    ]);
    clearTimeout(bound);
    if (outcome === 'ready') return;
    if (outcome === 'exited') throw new EarlyExitError('exited');
    await Promise.race([sleep(150), exitedFlag]);
  }
  if (gone) throw new EarlyExitError('exited');
  throw new Error(`dev server at ${p.address} did not become ready within ${p.timeoutMs} ms (last error: ${last})`);
}

/** How long one readiness attempt (a connect and three RPCs) may take, ms. */
const ATTEMPT_MS = 8_000;

/** One readiness attempt: connects, asks, closes. Throws what was not ready yet. */
async function attempt(p: { address: string; namespace: string; searchAttributes: string[] }): Promise<void> {
  const conn = await Connection.connect({ address: p.address, connectTimeout: 1000 }).catch((err: Error) => {
    throw new Error(`connect: ${err.message}`);
  });
  try {
    const rpcDeadline = () => Date.now() + 2000;
    await conn.withDeadline(rpcDeadline(), () => conn.workflowService.getSystemInfo({}));
    await conn.withDeadline(rpcDeadline(), () => conn.workflowService.describeNamespace({ namespace: p.namespace }));
    if (p.searchAttributes.length) {
      const res = await conn.withDeadline(rpcDeadline(), () =>
        conn.operatorService.listSearchAttributes({ namespace: p.namespace }),
      );
      const missing = p.searchAttributes.filter((n) => !(n in (res.customAttributes ?? {})));
      if (missing.length) throw new Error(`search attributes not registered yet: ${missing.join(', ')}`);
    }
  } finally {
    void conn.close().catch(() => undefined);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
