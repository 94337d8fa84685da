/**
 * `incident <job>`: a job's incident report, from the store: the job, each recorded provider
 * exchange (sanitised: endpoint, HTTP status, UTC time, request options, response body) and the
 * timeline.
 */
import type { Command } from 'commander';
import { redactUrlCredentials } from '../../lib/sanitize.js';
import { accountOf, resolveJobId, withRuntime } from '../context.js';
import { jobCommand, jsonOption } from '../options.js';
import { printJob, printJson, timelineLine } from '../print.js';

/** Adds `incident` to `program`. */
export function registerIncident(program: Command): void {
  jsonOption(jobCommand(program, 'incident'))
    .description(
      "print a job's incident report (sanitised provider exchanges: endpoint, HTTP status, UTC time, request, response) and its timeline",
    )
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = await resolveJobId(job, account);
        const summary = await rt.client.getScrape(account, id, { execution: false });
        const incidents = await rt.client.incidents(account, id);
        const events = await rt.client.timeline(account, id);
        if (opts.json) return printJson({ job: summary, incidents, timeline: events });
        await printJob(summary);
        const lines = [`\nIncidents (${incidents.length}):`];
        for (const i of incidents) {
          lines.push(
            `- ${i.at}  ${i.phase} ${i.kind}${i.code ? ` ${i.code}` : ''}${i.httpStatus ? ` HTTP ${i.httpStatus}` : ''}\n  endpoint: ${i.endpoint ?? '—'}\n  message:  ${i.message}`,
          );
          if (i.request) lines.push(`  request:  ${JSON.stringify(i.request)}`);
          if (i.response) lines.push(`  response: ${JSON.stringify(i.response)}`);
        }
        console.log(redactUrlCredentials(lines.join('\n')));
        console.log('\nTimeline:');
        for (const e of events) console.log(`  ${timelineLine(e)}`);
      }),
    );
}
