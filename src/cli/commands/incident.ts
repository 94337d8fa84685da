/**
 * `incident <job>`: a job's incident report, from the store: the job, each recorded provider
 * exchange (sanitised: endpoint, HTTP status, UTC time, request options, response body) and the
 * timeline.
 */
import type { Command } from 'commander';
import { accountOf, resolveJobId, withRuntime } from '../context.js';
import { accountOptions } from '../options.js';
import { printJob, timelineLine } from '../print.js';

/** Adds `incident` to `program`. */
export function registerIncident(program: Command): void {
  accountOptions(program.command('incident <job>'))
    .description(
      "print a job's incident report (sanitised provider exchanges: endpoint, HTTP status, UTC time, request, response) and its timeline",
    )
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
          console.log(
            `- ${i.at}  ${i.phase} ${i.kind}${i.code ? ` ${i.code}` : ''}${i.httpStatus ? ` HTTP ${i.httpStatus}` : ''}\n  endpoint: ${i.endpoint ?? '—'}\n  message:  ${i.message}`,
          );
          if (i.request) console.log(`  request:  ${JSON.stringify(i.request)}`);
          if (i.response) console.log(`  response: ${JSON.stringify(i.response)}`);
        }
        console.log('\nTimeline:');
        for (const e of events) console.log(`  ${timelineLine(e)}`);
      }),
    );
}
