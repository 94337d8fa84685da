/**
 * The Node versions the packages claim (`engines.node`) are true to what their dependencies ask,
 * read from the lockfile (what an install gets):
 *
 * - the full package admits no Node version that one of its runtime dependencies (the lockfile's
 *   packages that are not dev-only) refuses, and its lowest is their lowest: no stricter than needed;
 * - the client package (`packages/client`) and `examples/service/` admit no version that a package
 *   of the client's dependency closure refuses;
 * - none admits a Node line past its end of life (Node 20 ended on 2026-04-30: 22 and 24 are the
 *   maintained LTS lines);
 * - `@types/node` is of the lowest major each admits, so that code using a newer Node API does not
 *   type-check.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { lockClosure, lockName, readLockfile, type LockEntry } from '../../bench/lib/packages.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The oldest Node major still maintained. */
const MAINTAINED_FLOOR = 22;

/** Node versions probed: every minor of majors 18 to 26 (patch 0), in order. */
const VERSIONS = Array.from({ length: 9 }, (_, i) => 18 + i).flatMap((major) =>
  Array.from({ length: 31 }, (_, minor) => `${major}.${minor}.0`),
);

interface Manifest {
  engines?: { node?: string };
  devDependencies?: Record<string, string>;
}
const manifest = (rel: string) => JSON.parse(fs.readFileSync(path.join(REPO, rel, 'package.json'), 'utf8')) as Manifest;

/** The probed versions a range admits. */
const admitted = (range: string) => VERSIONS.filter((v) => semver.satisfies(v, range));

/** The probed versions every package of `entries` admits, and for each refused version one package that refuses it. */
function admittedByAll(entries: [string, LockEntry][]): { versions: string[]; refusedBy: Map<string, string> } {
  const refusedBy = new Map<string, string>();
  for (const v of VERSIONS) {
    const refusing = entries.find(([, e]) => e.engines?.node && !semver.satisfies(v, e.engines.node));
    if (refusing) refusedBy.set(v, `${refusing[0]} (${refusing[1].engines!.node})`);
  }
  return { versions: VERSIONS.filter((v) => !refusedBy.has(v)), refusedBy };
}

describe('engines', () => {
  const lock = readLockfile(REPO);

  it('of the full package: admits only what every runtime dependency admits, and all of it', () => {
    const range = manifest('.').engines?.node ?? '*';
    const runtime = Object.entries(lock).filter(([p, e]) => p.startsWith('node_modules/') && !e.dev);
    const deps = admittedByAll(runtime.map(([p, e]) => [lockName(p, e), e]));
    const claimed = admitted(range);
    expect(
      claimed.filter((v) => deps.refusedBy.has(v)).map((v) => `${v}: refused by ${deps.refusedBy.get(v)}`),
    ).toEqual([]);
    expect(claimed[0], `the lowest version ${range} admits`).toBe(deps.versions[0]);
  });

  it('of the client package and the example service: admit only what the client’s dependencies admit', () => {
    const closure = lockClosure(lock, 'packages/client');
    const deps = admittedByAll(closure.map((p) => [lockName(p, lock[p]!), lock[p]!]));
    for (const rel of ['packages/client', 'examples/service']) {
      const range = manifest(rel).engines?.node ?? '*';
      expect(
        admitted(range)
          .filter((v) => deps.refusedBy.has(v))
          .map((v) => `${rel} ${v}: refused by ${deps.refusedBy.get(v)}`),
      ).toEqual([]);
    }
  });

  it('admit no Node line past its end of life, and @types/node is of the lowest major admitted', () => {
    for (const rel of ['.', 'packages/client', 'examples/service']) {
      const m = manifest(rel);
      const floor = semver.minVersion(m.engines?.node ?? '*')!;
      expect(floor.major, `${rel}: lowest Node admitted`).toBeGreaterThanOrEqual(MAINTAINED_FLOOR);
      const types = m.devDependencies?.['@types/node'];
      if (types) expect(semver.minVersion(types)!.major, `${rel}: @types/node`).toBe(floor.major);
    }
  });
});
