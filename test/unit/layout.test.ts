/**
 * The code layout a newcomer relies on. The import graph of `src/` (type imports included) has no
 * cycle; production wiring (`runtime.ts`, `worker.ts`, the API) never loads the dev-server
 * spawner; the client and the API reach the database only through `Store` methods; the client's
 * entry is a short index of its parts. The layers point one way: `model/` is the vocabulary and
 * depends on no other part; `providers/` and `observability/` are handed what they need and never
 * reach up into the configuration module or the store; the providers lead with their contract
 * (`providers/adapter.ts`), with the helpers in `providers/shared/`.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '..', '..', 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Module → the modules of `src/` it imports (static, dynamic and type-only imports alike). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    const deps = info.importedFiles
      .map((f) => f.fileName)
      .filter((n) => n.startsWith('.'))
      .map((n) => path.resolve(path.dirname(file), n.replace(/\.js$/, '.ts')))
      .filter((p) => fs.existsSync(p));
    graph.set(file, deps);
  }
  return graph;
}

const rel = (p: string) => path.relative(SRC, p);

describe('layout', () => {
  const graph = importGraph();

  it('the import graph of src/ has no cycle (store/index → migrations → webhooks → Store was one)', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (f: string, stack: string[]) => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'visiting') {
        cycles.push([...stack.slice(stack.indexOf(f)), f].map(rel).join(' → '));
        return;
      }
      state.set(f, 'visiting');
      for (const d of graph.get(f) ?? []) visit(d, [...stack, f]);
      state.set(f, 'done');
    };
    for (const f of graph.keys()) visit(f, []);
    expect(cycles).toEqual([]);
  });

  it('production wiring (runtime, worker, API, client) never loads the dev-server spawner', () => {
    const reach = (from: string) => {
      const seen = new Set<string>();
      const walk = (f: string) => {
        if (seen.has(f)) return;
        seen.add(f);
        for (const d of graph.get(f) ?? []) walk(d);
      };
      walk(path.join(SRC, from));
      return [...seen].map(rel);
    };
    for (const entry of ['runtime.ts', 'worker.ts', 'api/main.ts', 'client/index.ts']) {
      expect(reach(entry).filter((m) => m.startsWith('devserver/')), entry).toEqual([]);
    }
  });

  it('the client, the API, the CLI and the batch runner use Store methods, never raw SQL', () => {
    const offenders = sourceFiles(SRC)
      .filter((f) => /^(client|api|batch|cli)\//.test(rel(f)) || rel(f) === 'cli.ts')
      .filter((f) => /\bfrom 'kysely'|\bsql`|\.db\.(selectFrom|insertInto|updateTable|deleteFrom)|store\.db\b/.test(fs.readFileSync(f, 'utf8')))
      .map(rel);
    expect(offenders).toEqual([]);
  });

  it('the client is split into parts with a short index that re-exports them', () => {
    const parts = ['start.ts', 'cancel.ts', 'views.ts', 'ids.ts', 'scrapeClient.ts', 'errors.ts', 'index.ts'];
    for (const p of parts) expect(fs.existsSync(path.join(SRC, 'client', p)), p).toBe(true);
    const index = fs.readFileSync(path.join(SRC, 'client', 'index.ts'), 'utf8');
    expect(index.split('\n').length).toBeLessThan(40);
    expect(index).not.toMatch(/\bclass\b|\bfunction\b/);
    for (const f of sourceFiles(path.join(SRC, 'client'))) expect(fs.readFileSync(f, 'utf8').split('\n').length, rel(f)).toBeLessThan(400);
  });

  /** Every module of `src/` reachable from `from` (itself included), relative to `src/`. */
  const reachable = (from: string): string[] => {
    const seen = new Set<string>();
    const walk = (f: string) => {
      if (seen.has(f)) return;
      seen.add(f);
      for (const d of graph.get(f) ?? []) walk(d);
    };
    walk(from);
    return [...seen].map(rel);
  };
  const under = (folder: string) => [...graph.keys()].filter((f) => rel(f).startsWith(`${folder}/`));
  const upward = (m: string) => m === 'config.ts' || m.startsWith('store/');

  it('providers/ import neither store/ nor config.ts, directly or through another module', () => {
    const offenders = under('providers').flatMap((f) => reachable(f).filter(upward).map((m) => `${rel(f)} → ${m}`));
    expect(offenders).toEqual([]);
  });

  it('observability/ imports neither store/ nor config.ts, directly or through another module', () => {
    const offenders = under('observability').flatMap((f) => reachable(f).filter(upward).map((m) => `${rel(f)} → ${m}`));
    expect(offenders).toEqual([]);
  });

  // The model is the vocabulary every layer shares, so it depends on none of them. The only modules
  // of src/ outside model/ it may use are these helpers of lib/, which themselves import nothing
  // from src/ (canonical JSON, JSON depth, secret detection).
  const MODEL_MAY_USE = ['lib/hash.ts', 'lib/json.ts', 'lib/sanitize.ts'];

  it('model/ imports nothing of src/ outside model/ (but the dependency-free lib/ helpers it names)', () => {
    const outside = (m: string) => !m.startsWith('model/') && !MODEL_MAY_USE.includes(m);
    const offenders = under('model').flatMap((f) => (graph.get(f) ?? []).map(rel).filter(outside).map((m) => `${rel(f)} → ${m}`));
    expect(offenders).toEqual([]);
    for (const helper of MODEL_MAY_USE) expect(graph.get(path.join(SRC, helper)), helper).toEqual([]);
  });

  it('the providers folder leads with its contract: adapter.ts, the kind list and registry at its root, helpers in shared/', () => {
    const root = fs.readdirSync(path.join(SRC, 'providers'), { withFileTypes: true });
    const files = root.filter((e) => e.isFile()).map((e) => e.name).sort();
    expect(files).toEqual(['adapter.ts', 'descriptor.ts', 'kinds.ts', 'registry.ts']);
    const adapter = fs.readFileSync(path.join(SRC, 'providers', 'adapter.ts'), 'utf8');
    expect(adapter).toMatch(/export interface ProviderAdapter\b/);
    expect(adapter).toMatch(/What every adapter must do/);
    for (const helper of ['http.ts', 'pagination.ts', 'webhook.ts', 'credentials.ts', 'keys.ts', 'errors.ts']) {
      expect(fs.existsSync(path.join(SRC, 'providers', 'shared', helper)), helper).toBe(true);
    }
    // Every folder beside shared/ is a kind with its descriptor.
    for (const kind of root.filter((e) => e.isDirectory() && e.name !== 'shared')) {
      expect(fs.existsSync(path.join(SRC, 'providers', kind.name, 'index.ts')), kind.name).toBe(true);
    }
  });

  it('adapters test success with ProviderHttp.ok()/isOk() only, never a hand-written 2xx range', () => {
    const handWritten = /status\s*(<|>=)\s*(200|300)\b/;
    const offenders = under('providers')
      .filter((f) => rel(f) !== 'providers/shared/http.ts')
      .flatMap((f) => fs.readFileSync(f, 'utf8').split('\n').flatMap((line, i) => (handWritten.test(line) ? [`${rel(f)}:${i + 1}`] : [])));
    expect(offenders).toEqual([]);
  });
});
