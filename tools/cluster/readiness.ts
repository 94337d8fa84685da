/**
 * Start-up checks of the cluster's processes (see `cluster.ts`): each one is waited for until it
 * serves (its port accepts connections, the frontend answers `GetSystemInfo`, the Web UI answers
 * HTTP), the namespace is registered and usable, and a workflow start is accepted. A process that
 * exits or does not serve in time fails the step with the tail of its log.
 */
import fs from 'node:fs';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import type { LineLogger } from '../devserver/process.js';
import type { ProcessGroup } from './processes.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The last lines of a process log; for the server's JSON lines only level and message. */
function tailOf(file: string, lines = 6): string {
  try {
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(-lines)
      .map((l) => {
        try {
          const j = JSON.parse(l) as { level?: string; msg?: string; error?: string };
          return `${j.level ?? ''}: ${j.msg ?? ''}${j.error ? ` (${j.error})` : ''}`.slice(0, 400);
        } catch {
          return l.slice(0, 400);
        }
      })
      .join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Waits until `host:port` accepts a TCP connection (every server service listens on its
 * membership port), polling every 200 ms for up to `timeoutMs` ms.
 * @throws Error when the process `name` of `processes` exits first, or on timeout (with its log tail).
 */
export async function waitForPort(
  host: string,
  port: number,
  name: string,
  processes: ProcessGroup,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!processes.get(name)) throw new Error(`${name} exited during start-up:\n${tailOf(processes.logFile(name))}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(200);
  }
  throw new Error(
    `${name} did not listen on ${host}:${port} within ${timeoutMs} ms:\n${tailOf(processes.logFile(name))}`,
  );
}

/**
 * Waits until the frontend at `address` (`host:port`) answers `GetSystemInfo`, polling every
 * 500 ms for up to `timeoutMs` ms.
 * @throws Error when the frontend, matching or worker process exits first, or on timeout (with the
 *   frontend's log tail and the last connection error).
 */
export async function waitForFrontend(
  address: string,
  processes: ProcessGroup,
  log: LineLogger,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    for (const n of ['frontend', 'matching', 'worker']) {
      if (!processes.get(n)) throw new Error(`${n} exited during start-up:\n${tailOf(processes.logFile(n))}`);
    }
    const conn = await Connection.connect({ address, connectTimeout: 1_000 }).catch((e: Error) => {
      last = e.message;
      return undefined;
    });
    if (conn) {
      try {
        await conn.withDeadline(Date.now() + 3_000, () => conn.workflowService.getSystemInfo({}));
        log(`frontend: serving on ${address}`);
        return;
      } catch (e) {
        last = (e as Error).message;
      } finally {
        await conn.close().catch(() => undefined);
      }
    }
    await sleep(500);
  }
  throw new Error(
    `the frontend did not answer on ${address} within ${timeoutMs} ms (${last}):\n${tailOf(processes.logFile('frontend'))}`,
  );
}

/**
 * Registers `namespace` at `address` (retention 3 days) unless it exists, then waits up to 60 s
 * until it is usable (its search attributes can be listed).
 * @throws Error when the registration is refused for another reason than "already exists", or the
 *   namespace is not usable in time.
 */
export async function ensureNamespace(address: string, namespace: string, log: LineLogger): Promise<void> {
  const conn = await Connection.connect({ address });
  try {
    try {
      await conn.workflowService.describeNamespace({ namespace });
      return;
    } catch {
      /* not there yet */
    }
    try {
      await conn.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') });
      log(`namespace ${namespace}: registered (retention 3 days)`);
    } catch (e) {
      if ((e as { code?: number }).code !== 6)
        throw new Error(`registering namespace ${namespace}: ${(e as Error).message}`);
    }
    // A new namespace reaches each service's namespace cache within its refresh interval (~10 s).
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await conn.operatorService.listSearchAttributes({ namespace });
        return;
      } catch (e) {
        if (Date.now() > deadline)
          throw new Error(`namespace ${namespace} not usable 60 s after registration: ${(e as Error).message}`);
        await sleep(500);
      }
    }
  } finally {
    await conn.close();
  }
}

/**
 * Waits until a workflow start on `namespace` is accepted (every history shard owned, the
 * namespace in every service's cache): starts and terminates a throw-away execution.
 */
export async function waitUntilStartable(
  connection: Connection,
  namespace: string,
  log: LineLogger,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (let i = 0; Date.now() < deadline; i++) {
    const workflowId = `cluster-ready-probe-${process.pid}-${Date.now()}-${i}`;
    try {
      await connection.withDeadline(Date.now() + 5_000, () =>
        connection.workflowService.startWorkflowExecution({
          namespace,
          workflowId,
          workflowType: { name: 'clusterReadyProbe' },
          taskQueue: { name: 'cluster-ready-probe' },
          requestId: workflowId,
          identity: 'scrape-orchestrator cluster',
        }),
      );
      await connection.workflowService.terminateWorkflowExecution({
        namespace,
        workflowExecution: { workflowId },
        reason: 'readiness probe',
        identity: 'scrape-orchestrator cluster',
      });
      log(`namespace ${namespace}: accepts workflows`);
      return;
    } catch (e) {
      last = (e as Error).message;
      await sleep(1_000);
    }
  }
  throw new Error(`namespace ${namespace} did not accept a workflow start within ${timeoutMs} ms: ${last}`);
}

/**
 * Waits until `url` answers a 2xx, polling every 300 ms for up to `timeoutMs` ms.
 * @throws Error when the process `name` of `processes` exits first, or on timeout (with its log tail).
 */
export async function waitForHttp(
  url: string,
  name: string,
  processes: ProcessGroup,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!processes.get(name)) throw new Error(`${name} exited during start-up:\n${tailOf(processes.logFile(name))}`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await sleep(300);
  }
  throw new Error(`${name} did not answer ${url} within ${timeoutMs} ms:\n${tailOf(processes.logFile(name))}`);
}
