/**
 * The container form of the topology stays in step with the native one: docker-compose.yml uses
 * the pinned server and Web UI versions and the same config files (which exist), its product
 * configuration passes the product's schema, and the Grafana dashboard queries only series we
 * define. (`docker-compose config` itself runs in .ci/run.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_VERSION } from '../../tools/cluster/binaries.js';
import { parseConfig } from '../../src/config.js';
import { registry } from '../../src/observability/metrics.js';
import { REPO } from '../helpers/stack.js';

const compose = fs.readFileSync(path.join(REPO, 'docker-compose.yml'), 'utf8');

describe('docker-compose.yml', () => {
  it('runs the pinned versions with the config files npm run cluster uses', () => {
    expect(compose).toContain(`image: temporalio/server:${TEMPORAL_SERVER_VERSION}`);
    expect(compose).toContain(`image: temporalio/ui:${TEMPORAL_UI_VERSION}`);
    expect(compose).toContain('./deploy/temporal/config:/etc/temporal/config/scrape:ro');
    expect(compose).toContain('--env cluster');
    for (const svc of ['frontend', 'matching', 'worker', 'history'])
      expect(compose).toContain(`start --service ${svc}`);
    expect(compose).toMatch(/temporal-history-2:/);
    const mounted = [...compose.matchAll(/\.\/(deploy\/[^:\s"]+)/g)].map((m) => m[1]!);
    expect(mounted.length).toBeGreaterThan(5);
    for (const p of mounted) expect(fs.existsSync(path.join(REPO, p)), p).toBe(true);
  });

  it('its product configuration passes the configuration schema', () => {
    const config = parseConfig(JSON.parse(fs.readFileSync(path.join(REPO, 'deploy/config.compose.json'), 'utf8')), {});
    expect(config.codec.enabled).toBe(true);
    expect(config.observability.metrics).toMatchObject({ workerPort: 9464, apiPort: 9465 });
    expect(config.temporal.address).toBe('temporal-frontend:7233');
  });

  it('the Grafana dashboard queries only scrape_* series that exist', async () => {
    const dash = JSON.parse(
      fs.readFileSync(path.join(REPO, 'deploy/grafana/dashboards/scrape-orchestrator.json'), 'utf8'),
    ) as {
      panels: { targets?: { expr: string }[] }[];
    };
    const exprs = dash.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
    const defined = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    const used = new Set(
      exprs.flatMap((e) => [...e.matchAll(/\bscrape_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''))),
    );
    expect(used.size).toBeGreaterThan(8);
    for (const name of used) expect(defined.has(name), name).toBe(true);
  });
});
