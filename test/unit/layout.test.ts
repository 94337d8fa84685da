/**
 * The code layout a newcomer relies on. The import graph of `src/` (type imports included) has no
 * cycle; `src/` is the product and imports none of the tools beside it (`tools/`: the simulator,
 * the dev-server and cluster launchers, the demo); nothing outside the store reaches the database but through its repositories
 * (`store.jobs`, `store.results`, …), which all share one style; the client's entry is a short
 * index of its parts; one workflow type is served, with no `patched()` branch in its code path; no
 * file grows past 600 lines (a sign of two responsibilities in one file). The layers point one way: `model/` is the vocabulary and
 * depends on no other part; `providers/` and `observability/` are handed what they need and never
 * reach up into the configuration module or the store; the providers lead with their contract
 * (`providers/adapter.ts`), with the helpers in `providers/shared/`.
 */
import fs from 'node:fs';
import os from 'node:os';
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

  it('src/ is the product: nothing in it imports the tools beside it (the simulator, the dev-server and cluster launchers, the demo in tools/)', () => {
    const TOOLS = path.resolve(SRC, '..', 'tools');
    const offenders = [...graph.entries()].flatMap(([f, deps]) =>
      deps.filter((d) => d.startsWith(`${TOOLS}${path.sep}`)).map((d) => `${rel(f)} → ${path.relative(SRC, d)}`),
    );
    expect(offenders).toEqual([]);
    for (const tool of ['sim', 'devserver', 'cluster', 'demo']) {
      expect(fs.existsSync(path.join(SRC, tool)), `src/${tool}`).toBe(false);
      expect(fs.existsSync(path.join(TOOLS, tool)), `tools/${tool}`).toBe(true);
    }
    // The check sees what it must: a tool imports the product.
    const sim = ts.preProcessFile(fs.readFileSync(path.join(TOOLS, 'sim', 'fetchPage.ts'), 'utf8'), true, true);
    expect(sim.importedFiles.some((f) => f.fileName.includes('../../src/'))).toBe(true);
  });

  it('the store’s callers use its repositories: no raw SQL in src/ outside src/store/', () => {
    const rawSql =
      /\bfrom 'kysely'|(?<![\w/.])sql`|\.(selectFrom|insertInto|updateTable|deleteFrom)\(|\b[sS]tore\.db\b|\b[sS]tore\.tx\(/;
    const offenders = sourceFiles(SRC)
      .filter((f) => !rel(f).startsWith('store/'))
      .filter((f) => rawSql.test(fs.readFileSync(f, 'utf8')))
      .map(rel);
    expect(offenders).toEqual([]);
    // The check sees what it must: the store itself writes SQL.
    expect(rawSql.test(fs.readFileSync(path.join(SRC, 'store', 'jobs.ts'), 'utf8'))).toBe(true);
  });

  it('the store has one style: a connection, one repository class per responsibility, an index that only re-exports', () => {
    const repositories = [
      'jobs.ts',
      'results.ts',
      'findings.ts',
      'polling.ts',
      'slots.ts',
      'limits.ts',
      'budgets.ts',
      'providerKeys.ts',
      'webhooks.ts',
      'apiIdempotency.ts',
    ];
    for (const file of repositories) {
      const text = fs.readFileSync(path.join(SRC, 'store', file), 'utf8');
      expect(text, file).toMatch(
        /export class \w+Repository \{\n {2}constructor\(private readonly conn: StoreConnection\) \{\}/,
      );
      // No operation as a free function over the store beside the class.
      expect(text, file).not.toMatch(/export (async )?function/);
    }
    const store = fs.readFileSync(path.join(SRC, 'store', 'store.ts'), 'utf8');
    for (const file of repositories) expect(store, file).toContain(`from './${file.replace(/\.ts$/, '.js')}'`);
    const index = fs.readFileSync(path.join(SRC, 'store', 'index.ts'), 'utf8');
    expect(index.split('\n').length).toBeLessThan(60);
    expect(index).not.toMatch(/\bclass\b|\bfunction\b|=>/);
  });

  it('one workflow type is served, and no patched() branch is left in its code path', () => {
    expect(fs.existsSync(path.join(SRC, 'legacy'))).toBe(false);
    const workflows = fs.readFileSync(path.join(SRC, 'workflows', 'index.ts'), 'utf8');
    expect(workflows.match(/scrapeWorkflow\w*/g)).toEqual(['scrapeWorkflowV6', 'scrapeWorkflowV6']);
    const patchedCalls = sourceFiles(path.join(SRC, 'workflows')).filter((f) =>
      /\bpatched\(|deprecatePatch\(/.test(fs.readFileSync(f, 'utf8')),
    );
    expect(patchedCalls.map(rel)).toEqual([]);
  });

  // Files are split by responsibility, never to stay under a count; past 600 lines a file has
  // always held more than one responsibility here, so the count only flags where to look.
  it('no file in src/ is over 600 lines', () => {
    const long = sourceFiles(SRC)
      .map((f) => [rel(f), fs.readFileSync(f, 'utf8').split('\n').length - 1] as const)
      .filter(([, n]) => n > 600);
    expect(long).toEqual([]);
  });

  it('the client is split into parts with a short index that re-exports them', () => {
    const parts = ['start.ts', 'cancel.ts', 'views.ts', 'ids.ts', 'scrapeClient.ts', 'errors.ts', 'index.ts'];
    for (const p of parts) expect(fs.existsSync(path.join(SRC, 'client', p)), p).toBe(true);
    const index = fs.readFileSync(path.join(SRC, 'client', 'index.ts'), 'utf8');
    expect(index.split('\n').length).toBeLessThan(60);
    expect(index).not.toMatch(/\bclass\b|\bfunction\b/);
    for (const f of sourceFiles(path.join(SRC, 'client')))
      expect(fs.readFileSync(f, 'utf8').split('\n').length, rel(f)).toBeLessThan(400);
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
    const offenders = under('providers').flatMap((f) =>
      reachable(f)
        .filter(upward)
        .map((m) => `${rel(f)} → ${m}`),
    );
    expect(offenders).toEqual([]);
  });

  it('observability/ imports neither store/ nor config.ts, directly or through another module', () => {
    const offenders = under('observability').flatMap((f) =>
      reachable(f)
        .filter(upward)
        .map((m) => `${rel(f)} → ${m}`),
    );
    expect(offenders).toEqual([]);
  });

  // The model is the vocabulary every layer shares, so it depends on none of them. The only modules
  // of src/ outside model/ it may use are these helpers of lib/, which themselves import nothing
  // from src/ (canonical JSON, JSON depth, secret detection).
  const MODEL_MAY_USE = ['lib/hash.ts', 'lib/jsonDepth.ts', 'lib/secretDetection.ts'];

  it('model/ imports nothing of src/ outside model/ (but the dependency-free lib/ helpers it names)', () => {
    const outside = (m: string) => !m.startsWith('model/') && !MODEL_MAY_USE.includes(m);
    const offenders = under('model').flatMap((f) =>
      (graph.get(f) ?? [])
        .map(rel)
        .filter(outside)
        .map((m) => `${rel(f)} → ${m}`),
    );
    expect(offenders).toEqual([]);
    for (const helper of MODEL_MAY_USE) expect(graph.get(path.join(SRC, helper)), helper).toEqual([]);
  });

  it('the providers folder leads with its contract: adapter.ts, the kind list, registry and gateway at its root, helpers in shared/', () => {
    const root = fs.readdirSync(path.join(SRC, 'providers'), { withFileTypes: true });
    const files = root
      .filter((e) => e.isFile())
      .map((e) => e.name)
      .sort();
    expect(files).toEqual(['adapter.ts', 'descriptor.ts', 'gateway.ts', 'kinds.ts', 'registry.ts']);
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
      .flatMap((f) =>
        fs
          .readFileSync(f, 'utf8')
          .split('\n')
          .flatMap((line, i) => (handWritten.test(line) ? [`${rel(f)}:${i + 1}`] : [])),
      );
    expect(offenders).toEqual([]);
  });

  /** Every comment of a source file (line and block comments, JSDoc included), with its 1-based line. */
  const commentsOf = (file: string): { line: number; text: string }[] => {
    const text = fs.readFileSync(file, 'utf8');
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const found = new Map<number, { line: number; text: string }>();
    const collect = (ranges: ts.CommentRange[] | undefined) => {
      for (const r of ranges ?? [])
        found.set(r.pos, { line: sf.getLineAndCharacterOfPosition(r.pos).line + 1, text: text.slice(r.pos, r.end) });
    };
    // Every token's leading trivia holds the comments before it; the same-line ones count as the
    // previous token's trailing comments, so both lists are read at each token.
    const visit = (node: ts.Node) => {
      collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
      collect(ts.getTrailingCommentRanges(text, node.getFullStart()));
      for (const child of node.getChildren(sf)) visit(child);
    };
    visit(sf);
    return [...found.values()];
  };

  // A comment that cites the old design brief by file name, a numbered rule or issue, or a path on
  // a developer's machine sends the reader somewhere the repository cannot follow: it says what it
  // means in words, and names docs/design.md by section.
  const OUTSIDE_CITATION = /(?<!docs\/)\bdesign\.md\b|\b(?:rule|issue)s? #?\d|(?<![\w.~-])\/(?:work|home)\//i;

  it('source comments state rules and reasons in words: no DESIGN.md, “rule N”, “issue N” or machine path', () => {
    // Only a file whose text matches anywhere is parsed for its comments.
    const cited = (f: string) =>
      OUTSIDE_CITATION.test(fs.readFileSync(f, 'utf8'))
        ? commentsOf(f).filter((c) => OUTSIDE_CITATION.test(c.text))
        : [];
    const offenders = [...graph.keys()].flatMap((f) =>
      cited(f).map((c) => `${rel(f)}:${c.line}: ${OUTSIDE_CITATION.exec(c.text)![0]}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the comment rule sees line, block and trailing comments alike (it can fail)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layout-comments-'));
    const file = path.join(dir, 'sample.ts');
    fs.writeFileSync(
      file,
      [
        '/** Header (see DESIGN.md). */',
        'export const a = 1; // trailing, issue 13',
        'export function f(): void {',
        '  /* block: rule 8 */',
        '}',
        "export const s = 'rule 3 in a string is not a comment';",
        '// the brief is docs/design.md, “Rules”',
        '// from /home/someone/notes',
        '',
      ].join('\n'),
    );
    try {
      const hits = commentsOf(file)
        .filter((c) => OUTSIDE_CITATION.test(c.text))
        .map((c) => c.line);
      expect(hits.sort((x, y) => x - y)).toEqual([1, 2, 4, 8]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
