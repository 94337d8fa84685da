/**
 * The process layout of the production topology and its ports: PostgreSQL, the Temporal frontend,
 * matching and worker services and two (or more) history services, each its own process with its
 * own gRPC, membership and metrics ports, the Web UI and the codec server. Every process of the
 * server reads the same config file (`deploy/temporal/config/cluster.yaml`) with its own
 * environment (see {@link serviceEnv}).
 */
import { freePortInRange } from '../../src/lib/ports.js';

/** A Temporal service process: its service name and ports. */
export interface ServiceProcess {
  /** Process name, e.g. `history-2`. */
  name: string;
  service: 'frontend' | 'history' | 'matching' | 'worker';
  grpcPort: number;
  membershipPort: number;
  /** Prometheus endpoint of the process (`/metrics`). */
  metricsPort: number;
  /** Frontend only: the HTTP API port. */
  httpPort?: number;
}

/** Every port of the topology. */
export interface Topology {
  host: string;
  postgresPort: number;
  services: ServiceProcess[];
  uiPort: number;
  codecPort: number;
}

/** The fixed ports of `npm run cluster` (frontend 7233 like every Temporal default). */
export function fixedTopology(historyProcesses = 2): Topology {
  const services: ServiceProcess[] = [
    { name: 'frontend', service: 'frontend', grpcPort: 7233, membershipPort: 6933, httpPort: 7243, metricsPort: 9233 },
    ...Array.from({ length: historyProcesses }, (_, i) => ({
      name: `history-${i + 1}`,
      service: 'history' as const,
      grpcPort: 7234 + i * 10,
      membershipPort: 6934 + i * 10,
      metricsPort: 9234 + i * 10,
    })),
    { name: 'matching', service: 'matching', grpcPort: 7235, membershipPort: 6935, metricsPort: 9235 },
    { name: 'worker', service: 'worker', grpcPort: 7239, membershipPort: 6939, metricsPort: 9239 },
  ];
  return { host: '127.0.0.1', postgresPort: 5433, services, uiPort: 8088, codecPort: 8089 };
}

/** The same layout on free loopback ports (tests, a second cluster on one machine). */
export async function freeTopology(historyProcesses = 2): Promise<Topology> {
  const taken: number[] = [];
  const port = async () => {
    // Below 32768: membership ports are a smallint in Temporal's schema.
    const p = await freePortInRange('127.0.0.1', 20_000, 32_000, taken);
    taken.push(p);
    return p;
  };
  const svc = async (name: string, service: ServiceProcess['service']): Promise<ServiceProcess> => ({
    name,
    service,
    grpcPort: await port(),
    membershipPort: await port(),
    metricsPort: await port(),
    ...(service === 'frontend' ? { httpPort: await port() } : {}),
  });
  const services = [await svc('frontend', 'frontend')];
  for (let i = 1; i <= historyProcesses; i++) services.push(await svc(`history-${i}`, 'history'));
  services.push(await svc('matching', 'matching'), await svc('worker', 'worker'));
  return { host: '127.0.0.1', postgresPort: await port(), services, uiPort: await port(), codecPort: await port() };
}

/** The frontend's gRPC address, `host:port`. */
export function frontendAddress(t: Topology): string {
  const f = t.services.find((s) => s.service === 'frontend');
  if (!f) throw new Error('topology without a frontend');
  return `${t.host}:${f.grpcPort}`;
}

/**
 * Environment of one server process for `deploy/temporal/config/cluster.yaml`: its own ports, the
 * shared database and the frontend address. Every variable is documented in that file.
 */
export function serviceEnv(
  t: Topology,
  p: ServiceProcess,
  db: { host: string; port: number; user: string; password?: string },
): Record<string, string> {
  const up = p.service.toUpperCase();
  return {
    TEMPORAL_DB_HOST: db.host,
    TEMPORAL_DB_PORT: String(db.port),
    TEMPORAL_DB_USER: db.user,
    TEMPORAL_DB_PASSWORD: db.password ?? '',
    TEMPORAL_BIND_IP: t.host,
    TEMPORAL_BROADCAST_ADDRESS: t.host,
    TEMPORAL_FRONTEND_ADDRESS: frontendAddress(t),
    [`TEMPORAL_${up}_GRPC_PORT`]: String(p.grpcPort),
    [`TEMPORAL_${up}_MEMBERSHIP_PORT`]: String(p.membershipPort),
    ...(p.httpPort ? { TEMPORAL_FRONTEND_HTTP_PORT: String(p.httpPort) } : {}),
    TEMPORAL_METRICS_ADDRESS: `${t.host}:${p.metricsPort}`,
  };
}
