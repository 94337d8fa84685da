/**
 * Command line: batches from CSV/JSONL, single jobs, inspection, cancellation, the demo.
 *
 * `npm run cli -- <command>` (or `npx tsx src/cli.ts <command>`). Every command except `demo`
 * reads the configuration from `--config`, `$SCRAPE_CONFIG` or the running demo's
 * `.data/demo/config.json`. Exit codes: 0 success; 1 failure (a job failed, an error); 2 invalid
 * input (a bad row, a bad argument); 3 not found.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import { readBatchFile } from './batch/input.js';
import { runBatch, type BatchRowOutcome } from './batch/run.js';
import { jobIdFor, ScrapeError, type JobSummary, type ResultDocumentsPage } from './client/index.js';
import { JOB_STATES } from './model/states.js';
import { openRuntime, openRuntimeFromFile, type Runtime } from './runtime.js';

const EXIT = { ok: 0, failed: 1, invalid: 2, notFound: 3 } as const;

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

function stateList(v: string): string[] {
  const states = v.split(',').map((x) => x.trim()).filter(Boolean);
  const bad = states.filter((x) => !(JOB_STATES as readonly string[]).includes(x));
  if (states.length === 0 || bad.length > 0) throw new InvalidArgumentError(`unknown state(s) ${bad.join(', ') || '(none given)'}; one of ${JOB_STATES.join(', ')}`);
  return states;
}

async function withRuntime<T>(opts: { config?: string }, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const rt = await openRuntimeFromFile(opts.config);
  try {
    return await fn(rt);
  } finally {
    await rt.close();
  }
}

function accountOf(rt: Runtime, opts: { account?: string }): string {
  return opts.account ?? process.env.SCRAPE_ACCOUNT ?? rt.config.defaultAccount;
}

/** Accepts a full job ID (`scrape:<account>:<key>`) or just the key. */
function resolveJobId(idOrKey: string, account: string): string {
  return idOrKey.startsWith('scrape:') ? idOrKey : jobIdFor(account, idOrKey);
}

function printJob(j: JobSummary): void {
  const t = new Table({ style: { head: [], border: [] }, chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' } });
  t.push(
    { job: j.jobId },
    { state: j.state + (j.execution ? `  (workflow ${j.execution.toLowerCase()})` : '') },
    { 'provider status': j.providerStatus ?? '—' },
    { provider: j.provider },
    { 'task ID': j.taskId ?? '—' },
    { url: j.url },
    { created: j.createdAt },
    { submitted: j.submittedAt ?? '—' },
    { finished: j.finishedAt ?? '—' },
    { deadline: j.deadlineAt ?? '—' },
    { 'status checks': String(j.statusChecks) },
    { 'last error': j.lastError ? `${j.lastError.kind}${j.lastError.code ? ` ${j.lastError.code}` : ''}: ${j.lastError.message}` : '—' },
  );
  console.log(t.toString());
}

/** Prints one page of result documents: a table (position, status, URL, title or error), or JSON. */
function printDocuments(p: ResultDocumentsPage, json: boolean): void {
  if (json) return console.log(JSON.stringify(p, null, 2));
  const t = new Table({ head: ['#', 'HTTP', 'url', 'title / error'], colWidths: [7, 6, 56, 50], wordWrap: true, style: { head: [], border: [] }, chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' } });
  for (const d of p.documents) t.push([String(d.seq), d.httpStatus ? String(d.httpStatus) : '—', d.url ?? '—', d.error ? `error${d.error.code ? ` ${d.error.code}` : ''}: ${d.error.message}` : (d.title ?? '(no title)')]);
  const range = p.documents.length ? `${p.offset + 1}-${p.offset + p.documents.length}` : 'none';
  console.log(`${t.toString()}\ndocuments ${range} of ${p.total}${p.nextOffset !== null ? ` (next: --offset ${p.nextOffset})` : ''}`);
}

function outcomeTable(rows: BatchRowOutcome[], max: number): string {
  const t = new Table({ head: ['line', 'state', 'url', 'title / error'], colWidths: [6, 22, 48, 60], wordWrap: true, style: { head: [], border: [] }, chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' } });
  for (const r of rows.slice(0, max)) {
    const detail = r.state === 'completed' ? `${r.title ?? '(no title)'}${r.httpStatus && r.httpStatus !== 200 ? ` [HTTP ${r.httpStatus}]` : ''}` : (r.error ?? '');
    t.push([String(r.line), r.state + (r.existed ? ' (existing)' : ''), r.url, detail]);
  }
  return t.toString() + (rows.length > max ? `\n… ${rows.length - max} more rows (use --max-rows)` : '');
}

function handleError(e: unknown): never {
  if (e instanceof ScrapeError) {
    console.error(`error (${e.code}): ${e.message}`);
    process.exit(e.code === 'not_found' ? EXIT.notFound : e.code === 'invalid' ? EXIT.invalid : EXIT.failed);
  }
  console.error(`error: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(EXIT.failed);
}

/** Builds the command tree (exported for tests). */
export function buildCli(): Command {
  const program = new Command('scrape')
    .description('Durable orchestration of asynchronous scraping APIs on Temporal')
    .showHelpAfterError()
    // Usage errors (unknown option, bad argument) exit 2 like every other invalid input; help and version 0.
    .exitOverride((err) => process.exit(err.exitCode === 0 ? EXIT.ok : EXIT.invalid))
    .configureHelp({ sortSubcommands: false });
  const common = (c: Command) => c.option('-c, --config <file>', 'configuration file (default: $SCRAPE_CONFIG, else the demo\'s)').option('-a, --account <name>', 'account to act as');

  common(program.command('run <file>'))
    .description('start one job per row of a CSV or JSONL file (needs a "url" column), show progress, print a table')
    .option('-p, --provider <name>', 'provider for rows that name none')
    .option('--no-wait', 'start the jobs and return')
    .addOption(new Option('--timeout-s <s>', 'stop waiting after this many seconds (jobs keep running)').argParser(positiveInt).default(600))
    .addOption(new Option('--max-rows <n>', 'rows shown in the final table').argParser(positiveInt).default(50))
    .option('--json', 'print the outcomes as JSON')
    .action(async (file: string, opts) => {
      const input = readBatchFile(file);
      for (const err of input.errors) console.error(`line ${err.line}: ${err.reason}${err.raw ? `  | ${err.raw}` : ''}`);
      if (input.items.length === 0 && input.errors.length === 0) {
        console.error(`${file} has no rows to run (a CSV needs a header with a "url" column and at least one row)`);
        process.exitCode = EXIT.invalid;
        return;
      }
      await withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        console.error(`${input.items.length} rows to run from ${file} (${input.format}, batch ${input.batchId}), ${input.errors.length} rejected`);
        const bar = new cliProgress.SingleBar(
          { format: ' {bar} {value}/{total} final | {states}', hideCursor: true, noTTYOutput: true, notTTYSchedule: 2000, stream: process.stderr },
          cliProgress.Presets.shades_classic,
        );
        bar.start(input.items.length, 0, { states: '' });
        const outcomes = await runBatch(rt.client, rt.store, input.items, {
          account,
          batchId: input.batchId,
          provider: opts.provider,
          wait: opts.wait,
          waitTimeoutMs: opts.timeoutS * 1000,
          onProgress: (p) => bar.update(p.final, { states: Object.entries(p.byState).map(([k, v]) => `${k} ${v}`).join(', ') }),
        });
        bar.stop();
        const all = [...outcomes, ...input.errors.map((e) => ({ line: e.line, url: e.raw, state: 'rejected' as const, error: e.reason }))].sort((a, b) => a.line - b.line);
        if (opts.json) console.log(JSON.stringify(all, null, 2));
        else console.log(outcomeTable(all, opts.maxRows));
        const failed = outcomes.filter((o) => o.state !== 'completed').length;
        console.error(`${outcomes.filter((o) => o.state === 'completed').length} completed, ${failed} not completed, ${all.filter((o) => o.state === 'rejected').length} rejected`);
        process.exitCode = input.errors.length || outcomes.some((o) => o.state === 'rejected') ? EXIT.invalid : failed ? EXIT.failed : EXIT.ok;
      });
    });

  common(program.command('submit <url>'))
    .description('start one scrape (returns its job ID at once; a repeat with the same key returns the same job)')
    .option('-k, --key <key>', 'idempotency key (default: derived from the request)')
    .option('-p, --provider <name>', 'provider name')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['markdown', 'text']).default('markdown'))
    .addOption(new Option('-w, --wait-s <s>', 'wait up to this many seconds for the job to end').argParser(positiveInt))
    .action(async (url: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const ref = await rt.client.startScrape({ account, url, key: opts.key, provider: opts.provider, format: opts.format });
        console.log(`${ref.created ? 'started' : 'existing'} job ${ref.jobId}`);
        if (opts.waitS) {
          const r = await rt.client.awaitResult(account, ref.jobId, { timeoutMs: opts.waitS * 1000 });
          if (r.status === 'still_running') console.log(`still running after ${opts.waitS} s (this is not a failure): state ${r.job.state}`);
          printJob(r.job);
        }
      }),
    );

  common(program.command('status <job>'))
    .description('show a job (job ID or key)')
    .option('--json', 'print JSON')
    .option('--live', 'ask the running workflow (query `state`) instead of the store')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = resolveJobId(job, account);
        if (opts.live) return console.log(JSON.stringify(await rt.client.getLiveView(account, id), null, 2));
        const j = await rt.client.getScrape(account, id);
        if (opts.json) console.log(JSON.stringify(j, null, 2));
        else printJob(j);
      }),
    );

  common(program.command('result <job>'))
    .description('print a job\'s stored result')
    .addOption(new Option('--field <field>', 'print only this field').choices(['markdown', 'text', 'title', 'links']))
    .option('--json', 'print JSON')
    .option('--documents', 'list the documents of a multi-document result (crawl pages, dataset items), one page')
    .option('--offset <n>', 'with --documents: first document (0-based)', (v) => (v === '0' ? 0 : positiveInt(v)), 0)
    .option('--limit <n>', 'with --documents: documents per page (max 1000)', positiveInt, 20)
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        if (opts.documents) return printDocuments(await rt.client.getResultDocuments(account, resolveJobId(job, account), { offset: opts.offset, limit: opts.limit }), Boolean(opts.json));
        const r = await rt.client.getResult(account, resolveJobId(job, account));
        if (opts.field === 'links') return console.log(r.links.join('\n'));
        if (opts.field) return console.log(String(r[opts.field as 'markdown' | 'text' | 'title'] ?? ''));
        if (opts.json) return console.log(JSON.stringify(r, null, 2));
        console.log(`# ${r.title ?? '(no title)'}\n\nURL: ${r.url}\nFinal URL: ${r.finalUrl ?? '—'} (HTTP ${r.httpStatus ?? '—'})\nTask: ${r.provider}/${r.taskId}\nWritten: ${r.writtenAt}; kept until ${r.expiresAt ?? 'forever'}\nLinks: ${r.links.length}\n\n${(r.markdown ?? r.text ?? '').slice(0, 2000)}`);
      }),
    );

  common(program.command('cancel <job>'))
    .description('cancel a job and print the outcome observed at the provider')
    .option('-r, --reason <text>', 'why', 'cancelled from the CLI')
    .option('--no-wait', 'send the cancel signal and return at once')
    .addOption(new Option('--wait-s <seconds>', 'how long to wait for the observed outcome before returning (the request stays recorded)').default(120).argParser(positiveInt))
    .option('--json', 'print JSON')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const r = await rt.client.cancelScrape(account, resolveJobId(job, account), { reason: opts.reason, requestedBy: `cli:${process.env.USER ?? 'user'}`, wait: opts.wait, timeoutMs: opts.waitS * 1000 });
        if (opts.json) return console.log(JSON.stringify(r, null, 2));
        if (r.kind === 'requested') return console.log(`cancel requested (signal sent)${r.note ? `: ${r.note}` : ''}; check with \`status\``);
        if (r.kind === 'not_running') {
          process.exitCode = EXIT.failed;
          return console.log(`nothing to cancel: the job is ${r.state} but its workflow no longer runs (an orphan); \`resume\` it, then cancel, or see \`orphans\``);
        }
        if (r.kind === 'already_final') return console.log(`nothing to cancel: the job is already ${r.state}${r.report ? ` (earlier cancel outcome: ${r.report.outcome} — ${r.report.detail})` : ''}`);
        console.log(`outcome: ${r.report.outcome} — ${r.report.detail}\nprovider cancel calls: ${r.report.providerCancelCalls}; remaining effects: ${JSON.stringify(r.report.remainingEffects ?? {})}`);
      }),
    );

  common(program.command('resume <job>'))
    .description('resume tracking of a tracking_interrupted job (same task ID, never resubmits)')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const ref = await rt.client.resume(account, resolveJobId(job, account));
        console.log(`resumed ${ref.jobId}`);
      }),
    );

  common(program.command('resolve <job>'))
    .description('resolve a job waiting in `unknown`: adopt a task ID found at the provider, or resubmit under the same key')
    .option('--task-id <id>', 'the provider task that the lost submit created')
    .option('--resubmit', 'you checked the provider and no task exists: submit again under the same key')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        if (!!opts.taskId === !!opts.resubmit) throw new ScrapeError('invalid', 'give exactly one of --task-id or --resubmit');
        const account = accountOf(rt, opts);
        const by = `cli:${process.env.USER ?? 'user'}`;
        const view = await rt.client.resolve(account, resolveJobId(job, account), opts.taskId ? { taskId: opts.taskId, by } : { resubmit: true, by });
        console.log(`job is now ${view.state}${view.taskId ? ` (task ${view.taskId})` : ''}`);
      }),
    );

  common(program.command('timeline <job>'))
    .description('print a job\'s timeline (every transition and provider observation)')
    .option('--json', 'print JSON')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const events = await rt.client.timeline(account, resolveJobId(job, account));
        if (opts.json) return console.log(JSON.stringify(events, null, 2));
        for (const e of events) console.log(`${e.at}  ${e.type.padEnd(28)} ${(e.state ?? '').padEnd(20)} ${e.detail ? JSON.stringify(e.detail) : ''}`);
      }),
    );

  common(program.command('incident <job>'))
    .description('print a job\'s incident report (sanitised provider exchanges: endpoint, HTTP status, UTC time, request, response) and its timeline')
    .option('--json', 'print JSON')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = resolveJobId(job, account);
        const summary = await rt.client.getScrape(account, id);
        const incidents = await rt.client.incidents(account, id);
        const events = await rt.client.timeline(account, id);
        if (opts.json) return console.log(JSON.stringify({ job: summary, incidents, timeline: events }, null, 2));
        printJob(summary);
        console.log(`\nIncidents (${incidents.length}):`);
        for (const i of incidents) {
          console.log(`- ${i.at}  ${i.phase} ${i.kind}${i.code ? ` ${i.code}` : ''}${i.httpStatus ? ` HTTP ${i.httpStatus}` : ''}\n  endpoint: ${i.endpoint ?? '—'}\n  message:  ${i.message}`);
          if (i.request) console.log(`  request:  ${JSON.stringify(i.request)}`);
          if (i.response) console.log(`  response: ${JSON.stringify(i.response)}`);
        }
        console.log('\nTimeline:');
        for (const e of events) console.log(`  ${e.at}  ${e.type.padEnd(28)} ${(e.state ?? '').padEnd(20)} ${e.detail ? JSON.stringify(e.detail) : ''}`);
      }),
    );

  common(program.command('orphans'))
    .description('list orphan and stalled jobs found by the maintenance schedule, with the suggested recovery')
    .option('--json', 'print JSON')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const found = await rt.client.orphans(accountOf(rt, opts));
        if (opts.json) return console.log(JSON.stringify(found, null, 2));
        if (found.length === 0) return console.log('no orphan or stalled jobs');
        const t = new Table({ head: ['job', 'finding', 'state', 'detail', 'suggested recovery'], colWidths: [36, 16, 14, 40, 60], wordWrap: true, style: { head: [], border: [] } });
        for (const o of found) t.push([o.jobId, o.kind, o.state, o.detail, o.suggestion]);
        console.log(t.toString());
      }),
    );

  common(program.command('cancel-batch <batchId>'))
    .description('cancel every job of a batch through the same path and print each observed outcome')
    .option('-r, --reason <text>', 'why', 'batch cancelled from the CLI')
    .option('--no-wait', 'send the cancel signals and return at once')
    .addOption(new Option('--wait-s <seconds>', 'how long to wait for each job\'s observed outcome (the request stays recorded)').default(120).argParser(positiveInt))
    .option('--json', 'print JSON')
    .action(async (batchId: string, opts) =>
      withRuntime(opts, async (rt) => {
        const outcomes = await rt.client.cancelBatch(accountOf(rt, opts), batchId, { reason: opts.reason, requestedBy: `cli:${process.env.USER ?? 'user'}`, wait: opts.wait, timeoutMs: opts.waitS * 1000 });
        if (opts.json) return console.log(JSON.stringify(outcomes, null, 2));
        const t = new Table({ head: ['job', 'result', 'state / outcome'], style: { head: [], border: [] } });
        for (const o of outcomes) {
          const r = o.result;
          t.push([o.jobId, r.kind, r.kind === 'observed' ? `${r.state}: ${r.report.outcome} — ${r.report.detail ?? ''}` : r.kind === 'error' ? r.message : r.state]);
        }
        console.log(t.toString());
        console.log(`${outcomes.length} job(s) in batch ${batchId}`);
      }),
    );

  common(program.command('list'))
    .description('list the account\'s jobs, newest first')
    .addOption(new Option('-s, --state <states>', `comma-separated states (${JOB_STATES.join(', ')})`).argParser(stateList))
    .option('-b, --batch <id>', 'batch ID')
    .addOption(new Option('-n, --limit <n>', 'rows').argParser(positiveInt).default(50))
    .option('--json', 'print JSON')
    .action(async (opts) =>
      withRuntime(opts, async (rt) => {
        const jobs = await rt.client.list(accountOf(rt, opts), { states: opts.state, batchId: opts.batch, limit: opts.limit });
        if (opts.json) return console.log(JSON.stringify(jobs, null, 2));
        const t = new Table({ head: ['job', 'state', 'task', 'url', 'updated'], style: { head: [], border: [] }, chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' } });
        for (const j of jobs) t.push([j.jobId, j.state, j.taskId ?? '—', j.url, j.updatedAt]);
        console.log(t.toString());
      }),
    );

  program
    .command('setup')
    .description('prepare an existing deployment: register the search attributes on the Temporal namespace and migrate the result store')
    .option('-c, --config <file>', 'configuration file')
    .action(async (opts) => {
      const { loadConfigFile } = await import('./config.js');
      const { findConfigFile } = await import('./runtime.js');
      const { connectOrStartTemporal } = await import('./devserver/devServer.js');
      const { openStore } = await import('./store/index.js');
      const config = loadConfigFile(findConfigFile(opts.config));
      const target = await connectOrStartTemporal({ env: { ...process.env, TEMPORAL_ADDRESS: config.temporal.address, TEMPORAL_NAMESPACE: config.temporal.namespace } });
      await target.stop();
      const store = await openStore(config.storeUrl);
      await store.close();
      const rt = await openRuntime(config);
      const { ensureMaintenanceSchedules } = await import('./client/schedules.js');
      const ids = await ensureMaintenanceSchedules(rt.client.temporal, { taskQueue: config.temporal.taskQueue });
      await rt.close();
      console.log(`search attributes registered on ${config.temporal.address} (namespace ${config.temporal.namespace}); store migrated; schedules ${ids.purge}, ${ids.orphans}`);
    });

  program
    .command('worker')
    .description('run a worker (same as `npm run worker`)')
    .option('-c, --config <file>', 'configuration file')
    .action(async (opts) => {
      if (opts.config) process.env.SCRAPE_CONFIG = opts.config;
      const { runWorkerMain } = await import('./worker.js');
      await runWorkerMain();
    });

  program
    .command('api')
    .description('run the HTTP API (same as `npm run api`), or make an API key with --new-key')
    .option('-c, --config <file>', 'configuration file')
    .option('--host <host>', 'listen address (default: config api.host, 127.0.0.1)')
    .option('--port <port>', 'listen port (default: config api.port, 8080)', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new InvalidArgumentError('a port 0-65535');
      return n;
    })
    .option('--new-key <account>', 'create an API key for <account>: its SHA-256 is added to the key file and the key is printed once')
    .option('--key-name <name>', 'label of the new key (who holds it)')
    .action(async (opts) => {
      const api = await import('./api/main.js');
      if (opts.newKey) {
        const { AccountSchema } = await import('./model/schemas.js');
        if (!AccountSchema.safeParse(opts.newKey).success) throw new InvalidArgumentError(`invalid account "${opts.newKey}"`);
        const { key, file } = api.createApiKey({ account: opts.newKey, name: opts.keyName, configFile: opts.config });
        console.error(`added the SHA-256 of a new key for account "${opts.newKey}" to ${file}; the key is shown once, store it now:`);
        console.log(key);
        return;
      }
      await api.runApiMain({ configFile: opts.config, host: opts.host, port: opts.port });
    });

  program
    .command('demo')
    .description('start every part on embedded defaults (dev server, reference provider, sample site, worker) and run a batch')
    .option('--keep', 'keep everything running after the batch (default when attached to a terminal)')
    .option('--exit', 'exit after the batch (default when not attached to a terminal)')
    .option('--data-dir <dir>', 'where the demo keeps its SQLite files and config', '.data/demo')
    .action(async (opts) => {
      const { runDemo } = await import('./demo.js');
      const keep = opts.exit ? false : opts.keep ? true : Boolean(process.stdout.isTTY && process.stdin.isTTY);
      process.exitCode = await runDemo({ keep, dataDir: opts.dataDir });
    });

  return program;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  buildCli()
    .parseAsync(process.argv)
    .catch(handleError);
}
