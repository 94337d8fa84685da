/**
 * The client package (`packages/client`, `@scrape-orchestrator/client`) is what a backend service
 * installs, so it must not bring the worker along:
 *
 * - its import graph — the files of `src/` its build compiles, followed from its tsconfig's entry
 *   through every import (type-only ones too: tsc compiles the file a type-only import names; and
 *   dynamic ones) — reaches no worker, simulator, workflow code, provider, API, CLI or metrics file;
 * - the packages it imports are exactly its manifest's dependencies (but protobufjs, declared to
 *   keep one copy of it), with the full package's ranges; `better-sqlite3` (native) is only
 *   imported dynamically, and is an optional peer dependency;
 * - the packages those dependencies install (their closure in the repository's lockfile, read in
 *   its `node_modules`) hold no native module, no install script but a known one that builds
 *   nothing, and none of the full package's heavy parts (`@temporalio/worker`,
 *   `@temporalio/workflow`, jsdom, Fastify, …).
 *
 * The message definitions it carries (`src/model/messages.ts`, written without
 * `@temporalio/workflow`) are the ones the SDK's `define*` functions make, and the workflow's
 * signature it starts with is the workflow's. Installing the packed tarball is
 * `test/integration/example-service.test.ts`; its size and time are `npm run bench:install`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import semver from 'semver';
import ts from 'typescript';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { isNativePackage, lockClosure, lockName, readLockfile } from '../../bench/lib/packages.js';
import {
  cancelSignal,
  cancelUpdate,
  resolveUpdate,
  stateQuery,
  wakeSignal,
  type ScrapeWorkflow,
} from '../../src/model/messages.js';
import type { scrapeWorkflowV6 } from '../../src/workflows/scrape/workflow.js';
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const CLIENT = path.join(REPO, 'packages', 'client');

/** Files of `src/` that must stay out of the client package, and what they are. */
const FORBIDDEN_FILES: [RegExp, string][] = [
  [/^src\/(worker|scrapeWorker)\.ts$/, 'the worker'],
  [/^src\/sim\//, 'the provider simulator'],
  [/^src\/workflows\/(?!searchAttributes\.ts$)/, 'workflow code'],
  [/^src\/(activities|providers|legacy)\//, 'activities and providers'],
  [
    /^src\/(api|cli|devserver|cluster|batch|codec)\/|^src\/(cli|demo|runtime|config)\.ts$/,
    'the API, CLI, demo or configuration',
  ],
  [/^src\/observability\//, 'metrics and tracing'],
];

/** Packages of the full package that a client must never install. */
const FORBIDDEN_PACKAGES = [
  '@temporalio/worker',
  '@temporalio/workflow',
  '@temporalio/activity',
  '@temporalio/core-bridge',
  'jsdom',
  'fastify',
  'unpdf',
  'prom-client',
  '@opentelemetry/api',
  '@swc/core',
  'esbuild',
  'better-sqlite3',
];

/**
 * Packages whose install script builds nothing: protobufjs 7 (under `@grpc/proto-loader`) runs a
 * `postinstall` that only warns about a dependent's version scheme.
 */
const SCRIPTS_WITHOUT_NATIVE_CODE = ['protobufjs'];

/**
 * Dependencies the client declares without importing them, to lay out what npm installs:
 * protobufjs, so that the major `@temporalio/proto` and `@temporalio/common` need sits at the top of
 * `node_modules` once; else `@grpc/proto-loader`'s older major takes that place and each of the two
 * gets a copy of its own (about 4 MB more).
 */
const LAYOUT_ONLY = ['protobufjs'];

type Use = 'value' | 'type' | 'dynamic';

interface ImportGraph {
  /** Files compiled, relative to the repository (`src/client/index.ts`, …). */
  files: string[];
  /** Bare packages imported (`node:` built-ins aside), with how. */
  packages: Map<string, Set<Use>>;
}

/** The package a bare specifier names (`@temporalio/client/lib/x` → `@temporalio/client`). */
const packageOf = (spec: string) =>
  spec
    .split('/')
    .slice(0, spec.startsWith('@') ? 2 : 1)
    .join('/');

/** Follows every import from `entries` (absolute `.ts` paths) through `src/`. */
function importGraph(entries: string[]): ImportGraph {
  const files = new Set<string>();
  const packages = new Map<string, Set<Use>>();
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const add = (spec: string, use: Use) => {
      if (spec.startsWith('.')) {
        const target = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
        if (!fs.existsSync(target)) throw new Error(`${path.relative(REPO, file)} imports ${spec}, not found`);
        queue.push(target);
      } else if (!spec.startsWith('node:')) {
        const uses = packages.get(packageOf(spec)) ?? new Set<Use>();
        packages.set(packageOf(spec), uses.add(use));
      }
    };
    const visit = (node: ts.Node) => {
      if (
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier)
      ) {
        const typeOnly = ts.isImportDeclaration(node) ? node.importClause?.isTypeOnly === true : node.isTypeOnly;
        add(node.moduleSpecifier.text, typeOnly ? 'type' : 'value');
      } else if (
        ts.isCallExpression(node) &&
        node.expression.kind === ts.SyntaxKind.ImportKeyword &&
        node.arguments[0] &&
        ts.isStringLiteral(node.arguments[0])
      ) {
        add(node.arguments[0].text, 'dynamic');
      } else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      ) {
        add(node.argument.literal.text, 'type');
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { files: [...files].map((f) => path.relative(REPO, f)).sort(), packages };
}

/** The entry files of the client package's build (its tsconfig's `files`), absolute. */
function clientEntries(): string[] {
  const tsconfig = path.join(CLIENT, 'tsconfig.json');
  const read = ts.readConfigFile(tsconfig, (f) => ts.sys.readFile(f));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, CLIENT);
  return parsed.fileNames.map((f) => path.resolve(f));
}

interface Manifest {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const readJson = <T>(file: string) => JSON.parse(fs.readFileSync(file, 'utf8')) as T;

describe('the client package', () => {
  const graph = importGraph(clientEntries());
  const manifest = readJson<Manifest>(path.join(CLIENT, 'package.json'));
  const full = readJson<Manifest>(path.join(REPO, 'package.json'));

  it('compiles no worker, simulator, workflow, provider, API, CLI or metrics file', () => {
    expect(graph.files).toContain('src/client/index.ts');
    expect(graph.files).toContain('src/lib/scrapeService.ts');
    const reached = graph.files.flatMap((f) =>
      FORBIDDEN_FILES.filter(([re]) => re.test(f)).map(([, what]) => `${f} (${what})`),
    );
    expect(reached).toEqual([]);
  });

  it('imports exactly its dependencies (the full package’s ranges); better-sqlite3 only dynamically, as an optional peer', () => {
    const imported = [...graph.packages.keys()].filter((p) => p !== 'better-sqlite3').sort();
    expect(imported).toEqual(
      Object.keys(manifest.dependencies ?? {})
        .filter((d) => !LAYOUT_ONLY.includes(d))
        .sort(),
    );
    for (const [name, range] of Object.entries(manifest.dependencies ?? {}))
      expect(range, `${name}'s range`).toBe(full.dependencies?.[name]);
    expect(imported.filter((p) => FORBIDDEN_PACKAGES.includes(p))).toEqual([]);

    expect([...(graph.packages.get('better-sqlite3') ?? [])].filter((u) => u === 'value')).toEqual([]);
    expect(graph.packages.get('better-sqlite3')).toContain('dynamic');
    expect(manifest.peerDependencies?.['better-sqlite3']).toBe(full.dependencies?.['better-sqlite3']);
    expect(manifest.peerDependenciesMeta?.['better-sqlite3']?.optional).toBe(true);
  });

  it('declares protobufjs only in a range @temporalio/proto accepts, so that it is one copy, not one more', () => {
    const lock = readLockfile(REPO);
    const wanted = lock['node_modules/@temporalio/proto']?.dependencies?.protobufjs;
    expect(wanted).toBeDefined();
    expect(
      semver.subset(manifest.dependencies!.protobufjs!, wanted!),
      `${manifest.dependencies!.protobufjs} ⊆ ${wanted}`,
    ).toBe(true);
  });

  it('installs no native module, no script that builds one, and none of the full package’s heavy parts', () => {
    const lock = readLockfile(REPO);
    expect(
      lock['packages/client'],
      'the workspace is in the lockfile (npm install after a manifest change)',
    ).toBeDefined();
    const closure = lockClosure(lock, 'packages/client');
    const names = closure.map((p) => lockName(p, lock[p]!));
    expect(names).toContain('@temporalio/client');
    expect(names.filter((n) => FORBIDDEN_PACKAGES.includes(n))).toEqual([]);
    expect(
      closure.filter((p) => lock[p]!.hasInstallScript && !SCRIPTS_WITHOUT_NATIVE_CODE.includes(lockName(p, lock[p]!))),
    ).toEqual([]);
    const onDisk = closure.filter((p) => fs.existsSync(path.join(REPO, p)));
    expect(onDisk.length).toBe(closure.length);
    expect(onDisk.filter((p) => isNativePackage(path.join(REPO, p)))).toEqual([]);
  });

  it('carries the message definitions the SDK would make, and the workflow signature it starts', () => {
    expect(stateQuery).toEqual(defineQuery('state'));
    expect(cancelSignal).toEqual(defineSignal('cancel'));
    expect(cancelUpdate).toEqual(defineUpdate('cancel'));
    expect(resolveUpdate).toEqual(defineUpdate('resolve'));
    expect(wakeSignal).toEqual(defineSignal('wake'));
    expectTypeOf<typeof scrapeWorkflowV6>().toExtend<ScrapeWorkflow>();
  });
});
