/**
 * Command line: batches from CSV/JSONL, single jobs, inspection, cancellation, the demo.
 *
 * `npm run cli -- <command>` runs the compiled entry (`bin/scrape.js` → `dist/cli.js`, built by
 * `npm run build`, which `npm ci` runs); `npx tsx src/cli.ts <command>` runs the source. Every
 * command except `demo` reads the configuration from `--config`, `$SCRAPE_CONFIG` or the running
 * demo's `.data/demo/config.json`.
 *
 * Exit codes: 0 success; 1 a job failed or did not complete, or a service failed (Temporal
 * unreachable, …); 2 invalid input (a bad row or argument, a missing input or configuration file,
 * an invalid configuration, a request refused for the job's state such as `resolve` of a job that
 * is not in `unknown`, a key reused with other parameters); 3 no such job.
 *
 * Start-up time: only commander and pure modules load before a command runs; each command imports
 * what it needs (the Temporal client, the store, …), so `--help` answers at once.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { decimal, delimiter, duration, policyFrom, policyOptions, port, positiveInt, stateList } from './cli/options.js';
import { COMPACT, outcomeTable, printDocuments, printJob, printLiveView, table } from './cli/print.js';
import type { Config } from './config.js';
import { InvalidInputError, ScrapeError } from './client/errors.js';
import { isFinalState, JOB_STATES } from './model/states.js';
import type { Runtime } from './runtime.js';

const EXIT = { ok: 0, failed: 1, invalid: 2, notFound: 3 } as const;

/** The configuration of `--config` / `$SCRAPE_CONFIG` / the demo's; a missing or invalid one is invalid input (exit 2). */
async function loadCliConfig(explicit?: string): Promise<{ config: Config; file: string }> {
  const { findConfigFile } = await import('./runtime.js');
  const { loadConfigFile } = await import('./config.js');
  try {
    const file = findConfigFile(explicit);
    return { config: loadConfigFile(file), file };
  } catch (e) {
    throw new InvalidInputError((e as Error).message, []);
  }
}

/**
 * Runs `fn` with an open runtime. Temporal is connected lazily: a command that reads only the
 * store never waits for it.
 */
async function withRuntime<T>(opts: { config?: string }, fn: (rt: Runtime) => Promise<T>): Promise<T> {
  const { config } = await loadCliConfig(opts.config);
  temporalAddress = config.temporal.address; // for the "cannot reach Temporal" message
  const { openRuntime } = await import('./runtime.js');
  const rt = await openRuntime(config, { lazyTemporal: true });
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
async function resolveJobId(idOrKey: string, account: string): Promise<string> {
  const { jobIdOf } = await import('./client/ids.js');
  return jobIdOf(idOrKey, account);
}

/** True for the errors of a Temporal that cannot be reached (gRPC UNAVAILABLE / DEADLINE_EXCEEDED, refused connections). */
function isTemporalUnreachable(e: unknown): boolean {
  for (let c: unknown = e, i = 0; c && i < 5; c = (c as { cause?: unknown }).cause, i++) {
    const code = (c as { code?: unknown }).code;
    if (code === 14 || code === 4) return true;
    if (c instanceof Error && /Failed to connect to Temporal server|ECONNREFUSED|No connection established|UNAVAILABLE/i.test(c.message)) return true;
  }
  return false;
}

let temporalAddress: string | undefined;

/**
 * Why field `field` of result `r` is empty, for `result --field` (`documents`: the result's
 * document count): the result's content note, a multi-document result whose content is in its
 * documents, a binary body without text, or the provider having sent none.
 */
function emptyFieldReason(r: { contentNote: string | null; body: { contentType: string | null; size: number } | null; httpStatus: number | null }, field: string, documents: number): string {
  if (r.contentNote) return r.contentNote;
  if (documents > 0) return `this result has ${documents} document(s) and keeps its content in them; list them with \`result --documents\``;
  if (r.body) return `the target's body is binary (${r.body.contentType ?? 'unknown type'}, ${r.body.size} bytes) and has no ${field}`;
  return `the provider returned no ${field} for this page${r.httpStatus ? ` (target HTTP ${r.httpStatus})` : ''}`;
}

function handleError(e: unknown): never {
  if (e instanceof ScrapeError) {
    console.error(`error (${e.code}): ${e.message}`);
    process.exit(e.code === 'not_found' ? EXIT.notFound : e.code === 'invalid' || e.code === 'conflict' ? EXIT.invalid : EXIT.failed);
  }
  if (isTemporalUnreachable(e)) {
    console.error(`error: cannot reach Temporal${temporalAddress ? ` at ${temporalAddress}` : ''} (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); status, result, list, timeline, incident and orphans read only the store and work without it`);
    process.exit(EXIT.failed);
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
    .configureHelp({ sortSubcommands: false })
    .addHelpText('after', '\nExit codes: 0 done; 1 failed or not completed (or Temporal unreachable); 2 invalid input (usage, a missing input or config file, a refused request); 3 no such job.');
  const common = (c: Command) => c.option('-c, --config <file>', 'configuration file (default: $SCRAPE_CONFIG, else the demo\'s)').option('-a, --account <name>', 'account to act as');

  policyOptions(common(program.command('run <file>')))
    .description('start one job per row of a CSV or JSONL file (needs a "url" column), show progress, print a table')
    .option('-p, --provider <name>', 'provider for rows that name none')
    .addOption(new Option('-d, --delimiter <char>', 'CSV field delimiter (default ","; e.g. ";" or tab)').argParser(delimiter))
    .option('--no-wait', 'start the jobs and return')
    .addOption(new Option('--timeout-s <s>', 'stop waiting after this many seconds (jobs keep running)').argParser(positiveInt).default(600))
    .addOption(new Option('--max-rows <n>', 'rows shown in the final table').argParser(positiveInt).default(50))
    .option('--json', 'print the outcomes as JSON')
    .action(async (file: string, opts) => {
      const policy = await policyFrom(opts);
      const { readBatchFile } = await import('./batch/input.js');
      const input = readBatchFile(file, { delimiter: opts.delimiter });
      for (const err of input.errors) console.error(`line ${err.line}: ${err.reason}${err.raw ? `  | ${err.raw}` : ''}`);
      if (input.items.length === 0 && input.errors.length === 0) {
        console.error(`${file} has no rows to run (a CSV needs a header with a "url" column and at least one row)`);
        process.exitCode = EXIT.invalid;
        return;
      }
      await withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const { runBatch } = await import('./batch/run.js');
        const { default: cliProgress } = await import('cli-progress');
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
          policy,
          wait: opts.wait,
          waitTimeoutMs: opts.timeoutS * 1000,
          onProgress: (p) => bar.update(p.final, { states: Object.entries(p.byState).map(([k, v]) => `${k} ${v}`).join(', ') }),
        });
        bar.stop();
        const all = [...outcomes, ...input.errors.map((e) => ({ line: e.line, url: e.raw, state: 'rejected' as const, error: e.reason }))].sort((a, b) => a.line - b.line);
        if (opts.json) console.log(JSON.stringify(all, null, 2));
        else console.log(await outcomeTable(all, opts.maxRows));
        const failed = outcomes.filter((o) => o.state !== 'completed').length;
        console.error(`${outcomes.filter((o) => o.state === 'completed').length} completed, ${failed} not completed, ${all.filter((o) => o.state === 'rejected').length} rejected`);
        // Without waiting, success is "every row started"; a job still running is not a failure.
        const notDone = opts.wait === false ? outcomes.filter((o) => o.state !== 'completed' && (o.state === 'rejected' || isFinalState(o.state))).length : failed;
        process.exitCode = input.errors.length || outcomes.some((o) => o.state === 'rejected') ? EXIT.invalid : notDone ? EXIT.failed : EXIT.ok;
      });
    });

  policyOptions(common(program.command('submit <url>')))
    .description('start one scrape (returns its job ID at once; a repeat with the same key returns the same job)')
    .option('-k, --key <key>', 'idempotency key (default: derived from the request: <host>-<hash>)')
    .option('-p, --provider <name>', 'provider name')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['markdown', 'text']).default('markdown'))
    .addOption(new Option('-w, --wait-s <s>', 'wait up to this many seconds for the job to end').argParser(positiveInt))
    .action(async (url: string, opts) => {
      const policy = await policyFrom(opts);
      await withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const ref = await rt.client.startScrape({ account, url, key: opts.key, provider: opts.provider, format: opts.format, ...(policy ? { policy } : {}) });
        console.log(`${ref.created ? 'started' : 'existing'} job ${ref.jobId}`);
        if (opts.waitS) {
          const r = await rt.client.awaitResult(account, ref.jobId, { timeoutMs: opts.waitS * 1000 });
          if (r.status === 'still_running') console.log(`still running after ${opts.waitS} s (this is not a failure): state ${r.job.state}`);
          await printJob(r.job);
        }
      });
    });

  common(program.command('status <job>'))
    .description('show a job as stored (job ID or key): state, provider status, checks answered and failing, last error')
    .option('--json', 'print JSON')
    .option('--live', 'also ask the running workflow (query `state`; needs Temporal and a worker)')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = await resolveJobId(job, account);
        const stored = await rt.client.getScrape(account, id, { execution: false });
        if (!opts.live) return opts.json ? console.log(JSON.stringify(stored, null, 2)) : printJob(stored);
        const live = await rt.client.getLiveView(account, id);
        if (opts.json) return console.log(JSON.stringify({ job: stored, live }, null, 2));
        await printJob(stored);
        await printLiveView(live);
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
        if (opts.documents) return printDocuments(await rt.client.getResultDocuments(account, await resolveJobId(job, account), { offset: opts.offset, limit: opts.limit }), Boolean(opts.json));
        const id = await resolveJobId(job, account);
        const r = await rt.client.getResult(account, id);
        if (opts.field) {
          const field = opts.field as 'markdown' | 'text' | 'title' | 'links';
          const value = field === 'links' ? r.links.join('\n') : (r[field] ?? '');
          if (value.trim() !== '') return console.log(value);
          // An empty field is not an answer: say which field and why, on stderr, and exit 1.
          const docs = field === 'links' ? 0 : (await rt.client.getResultDocuments(account, id, { offset: 0, limit: 1 })).total;
          console.error(`error: the result of ${id} has no ${field}: ${emptyFieldReason(r, field, docs)}`);
          process.exitCode = EXIT.failed;
          return;
        }
        if (opts.json) return console.log(JSON.stringify(r, null, 2));
        const file = r.body ? `\nBody: ${r.body.contentType ?? 'binary'}, ${r.body.size} bytes, SHA-256 ${r.body.sha256}` : '';
        const note = r.contentNote ? `\nNote: ${r.contentNote}` : '';
        console.log(`# ${r.title ?? '(no title)'}\n\nURL: ${r.url}\nFinal URL: ${r.finalUrl ?? '—'} (HTTP ${r.httpStatus ?? '—'})\nTask: ${r.provider}/${r.taskId}\nWritten: ${r.writtenAt}; kept until ${r.expiresAt ?? 'forever'}\nLinks: ${r.links.length}${file}${note}\n\n${(r.markdown ?? r.text ?? '').slice(0, 2000)}`);
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
        const r = await rt.client.cancelScrape(account, await resolveJobId(job, account), { reason: opts.reason, requestedBy: `cli:${process.env.USER ?? 'user'}`, wait: opts.wait, timeoutMs: opts.waitS * 1000 });
        if (opts.json) return console.log(JSON.stringify(r, null, 2));
        if (r.kind === 'requested') return console.log(`cancel requested (signal sent)${r.note ? `: ${r.note}` : ''}; check with \`status\``);
        if (r.kind === 'not_running') {
          process.exitCode = EXIT.failed;
          return console.log(`nothing to cancel: the job is ${r.state} but its workflow no longer runs (an orphan); \`resume\` it, then cancel, or see \`orphans\``);
        }
        if (r.kind === 'already_final' && r.state === 'tracking_interrupted') {
          // Tracking ended, the provider task may not have: say how to reach it.
          return console.log(`nothing to cancel here: tracking of the job ended (tracking_interrupted), but its provider task may still run; \`resume ${job}\` tracks it again, then \`cancel ${job}\` cancels it at the provider`);
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
        const ref = await rt.client.resume(account, await resolveJobId(job, account));
        console.log(`resumed ${ref.jobId}`);
      }),
    );

  common(program.command('resolve <job>'))
    .description('resolve a job waiting in `unknown`: adopt a task ID found at the provider, or resubmit under the same key')
    .option('--task-id <id>', 'the provider task that the lost submit created')
    .option('--resubmit', 'you checked the provider and no task exists: submit again under the same key')
    .action(async (job: string, opts) => {
      if (!!opts.taskId === !!opts.resubmit) throw new InvalidInputError('give exactly one of --task-id or --resubmit', []);
      await withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const by = `cli:${process.env.USER ?? 'user'}`;
        const view = await rt.client.resolve(account, await resolveJobId(job, account), opts.taskId ? { taskId: opts.taskId, by } : { resubmit: true, by });
        console.log(`job is now ${view.state}${view.taskId ? ` (task ${view.taskId})` : ''}`);
      });
    });

  common(program.command('timeline <job>'))
    .description('print a job\'s timeline (every transition and provider observation)')
    .option('--json', 'print JSON')
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const events = await rt.client.timeline(account, await resolveJobId(job, account));
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
        const id = await resolveJobId(job, account);
        const summary = await rt.client.getScrape(account, id, { execution: false });
        const incidents = await rt.client.incidents(account, id);
        const events = await rt.client.timeline(account, id);
        if (opts.json) return console.log(JSON.stringify({ job: summary, incidents, timeline: events }, null, 2));
        await printJob(summary);
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
        const t = await table({ head: ['job', 'finding', 'state', 'detail', 'suggested recovery'], colWidths: [36, 16, 14, 40, 60], wordWrap: true });
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
        const t = await table({ head: ['job', 'result', 'state / outcome'] });
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
        const t = await table({ head: ['job', 'state', 'task', 'url', 'updated'], chars: COMPACT });
        for (const j of jobs) t.push([j.jobId, j.state, j.taskId ?? '—', j.url, j.updatedAt]);
        console.log(t.toString());
      }),
    );

  program
    .command('setup')
    .description('prepare an existing deployment: register the search attributes on the Temporal namespace and migrate the result store')
    .option('-c, --config <file>', 'configuration file')
    .action(async (opts) => {
      const { config } = await loadCliConfig(opts.config);
      const { openRuntime } = await import('./runtime.js');
      const { connectOrStartTemporal } = await import('./devserver/devServer.js');
      const target = await connectOrStartTemporal({ env: { ...process.env, TEMPORAL_ADDRESS: config.temporal.address, TEMPORAL_NAMESPACE: config.temporal.namespace } });
      await target.stop();
      const rt = await openRuntime(config); // also migrates the store
      const { ensureMaintenanceSchedules, maintenanceTaskQueue } = await import('./client/schedules.js');
      const ids = await ensureMaintenanceSchedules(rt.client.temporal, { taskQueue: config.temporal.taskQueue });
      await rt.close();
      console.log(`search attributes registered on ${config.temporal.address} (namespace ${config.temporal.namespace}); store migrated; schedules ${ids.purge}, ${ids.orphans} (task queue ${maintenanceTaskQueue(config.temporal.taskQueue)})`);
    });

  program
    .command('worker')
    .description('run a worker (same as `npm run worker`); it polls the task queue and the maintenance task queue')
    .option('-c, --config <file>', 'configuration file (default: $SCRAPE_CONFIG, else the demo\'s)')
    .action(async (opts) => {
      const { file } = await loadCliConfig(opts.config);
      process.env.SCRAPE_CONFIG = file;
      const { runWorkerMain } = await import('./worker.js');
      await runWorkerMain();
    });

  program
    .command('api')
    .description('run the HTTP API (same as `npm run api`), or make an API key with --new-key')
    .option('-c, --config <file>', 'configuration file')
    .option('--host <host>', 'listen address (default: config api.host, 127.0.0.1)')
    .addOption(new Option('--port <port>', 'listen port (default: config api.port, 8080)').argParser(port))
    .option('--new-key <account>', 'create an API key for <account>: its SHA-256 is added to the key file and the key is printed once')
    .option('--key-name <name>', 'label of the new key (who holds it)')
    .action(async (opts) => {
      const { file } = await loadCliConfig(opts.config);
      const api = await import('./api/main.js');
      if (opts.newKey) {
        const { AccountSchema } = await import('./model/schemas.js');
        if (!AccountSchema.safeParse(opts.newKey).success) throw new InvalidInputError(`invalid account "${opts.newKey}"`, []);
        const { key, file: keysFile } = api.createApiKey({ account: opts.newKey, name: opts.keyName, configFile: file });
        console.error(`added the SHA-256 of a new key for account "${opts.newKey}" to ${keysFile}; the key is shown once, store it now (a running API picks it up within a second):`);
        console.log(key);
        return;
      }
      await api.runApiMain({ configFile: file, host: opts.host, port: opts.port });
    });

  program
    .command('demo')
    .description('start every part on embedded defaults (dev server, reference provider, sample site, worker) and run a batch')
    .option('--keep', 'keep everything running after the batch (default when attached to a terminal)')
    .option('--exit', 'exit after the batch (default when not attached to a terminal)')
    .option('--data-dir <dir>', 'where the demo keeps its SQLite files and config', '.data/demo')
    .addOption(new Option('--temporal-port <n>', 'Temporal frontend (gRPC) port; default 7233 when free, else any; 0: any').argParser(port).env('SCRAPE_DEMO_TEMPORAL_PORT'))
    .addOption(new Option('--ui-port <n>', 'Temporal Web UI port; default 8233 when free, else any; 0: any').argParser(port).env('SCRAPE_DEMO_UI_PORT'))
    .addOption(new Option('--site-port <n>', 'sample site port; default 8780 when free, else any; 0: any').argParser(port).env('SCRAPE_DEMO_SITE_PORT'))
    .addOption(new Option('--provider-port <n>', 'reference provider port; default 8790 when free, else any; 0: any').argParser(port).env('SCRAPE_DEMO_PROVIDER_PORT'))
    .action(async (opts) => {
      const { runDemo } = await import('./demo.js');
      const keep = opts.exit ? false : opts.keep ? true : Boolean(process.stdout.isTTY && process.stdin.isTTY);
      process.exitCode = await runDemo({ keep, dataDir: opts.dataDir, ports: { temporal: opts.temporalPort, ui: opts.uiPort, site: opts.sitePort, provider: opts.providerPort } });
    });

  return program;
}

/** Runs the CLI on `argv` (process.argv shape); used by `bin/scrape.js` and when this file is the entry. */
export async function main(argv: string[] = process.argv): Promise<void> {
  await buildCli().parseAsync(argv).catch(handleError);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) void main();
