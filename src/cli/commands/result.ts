/**
 * `result <job>`: the stored result (title, URLs, task, times, the start of the content);
 * `--field` prints one field alone, `--documents` one page of the documents of a multi-document
 * result. A field that is empty is not printed as an empty line: the reason goes to stderr and
 * the exit code is 1.
 */
import { Option, type Command } from 'commander';
import { CliError, EXIT, accountOf, resolveJobId, withRuntime } from '../context.js';
import { exitNote, jobCommand, jsonOption, positiveInt } from '../options.js';
import { printDocuments, printJson } from '../print.js';

/**
 * Why field `field` of result `r` is empty (`documents`: the result's document count): the
 * result's content note, a multi-document result whose content is in its documents, a binary
 * body without text, or the provider having sent none.
 */
function emptyFieldReason(
  r: {
    contentNote: string | null;
    body: { contentType: string | null; size: number } | null;
    httpStatus: number | null;
  },
  field: string,
  documents: number,
): string {
  if (r.contentNote) return r.contentNote;
  if (documents > 0)
    return `this result has ${documents} document(s) and keeps its content in them; list them with \`result --documents\``;
  if (r.body)
    return `the target's body is binary (${r.body.contentType ?? 'unknown type'}, ${r.body.size} bytes) and has no ${field}`;
  return `the provider returned no ${field} for this page${r.httpStatus ? ` (target HTTP ${r.httpStatus})` : ''}`;
}

/** Adds `result` to `program`. */
export function registerResult(program: Command): void {
  const c = jsonOption(jobCommand(program, 'result'), 'print JSON (with --field: {"field", "value"})')
    .description("print a job's stored result")
    .addOption(new Option('--field <field>', 'print only this field').choices(['markdown', 'text', 'title', 'links']))
    .option('--documents', 'list the documents of a multi-document result (crawl pages, dataset items), one page')
    .option('--offset <n>', 'with --documents: first document (0-based)', (v) => (v === '0' ? 0 : positiveInt(v)), 0)
    .option('--limit <n>', 'with --documents: documents per page (max 1000)', positiveInt, 20)
    .action(async (job: string, opts) =>
      withRuntime(opts, async (rt) => {
        const account = accountOf(rt, opts);
        const id = await resolveJobId(job, account);
        const page = { offset: opts.offset, limit: opts.limit };
        if (opts.documents) return printDocuments(await rt.client.getResultDocuments(account, id, page), !!opts.json);
        const r = await rt.client.getResult(account, id);
        if (opts.field) {
          const field = opts.field as 'markdown' | 'text' | 'title' | 'links';
          const value = field === 'links' ? r.links.join('\n') : (r[field] ?? '');
          if (value.trim() !== '')
            return opts.json
              ? printJson({ field, value: field === 'links' ? r.links : value }, { redact: false })
              : console.log(value);
          // An empty field is not an answer: say which field and why (an error: stderr, or JSON), and exit 1.
          const docs =
            field === 'links' ? 0 : (await rt.client.getResultDocuments(account, id, { offset: 0, limit: 1 })).total;
          throw new CliError(
            'empty_field',
            `the result of ${id} has no ${field}: ${emptyFieldReason(r, field, docs)}`,
            EXIT.failed,
            { jobId: id, field },
          );
        }
        if (opts.json) return printJson(r, { redact: false });
        const file = r.body
          ? `\nBody: ${r.body.contentType ?? 'binary'}, ${r.body.size} bytes, SHA-256 ${r.body.sha256}`
          : '';
        const note = r.contentNote ? `\nNote: ${r.contentNote}` : '';
        console.log(
          `# ${r.title ?? '(no title)'}\n\nURL: ${r.url}\nFinal URL: ${r.finalUrl ?? '—'} (HTTP ${r.httpStatus ?? '—'})\nTask: ${r.provider}/${r.taskId}\nWritten: ${r.writtenAt}; kept until ${r.expiresAt ?? 'forever'}\nLinks: ${r.links.length}${file}${note}\n\n${(r.markdown ?? r.text ?? '').slice(0, 2000)}`,
        );
      }),
    );
  exitNote(
    c,
    '0 printed; 1 the job has no result yet or ever (`not_ready`, with its state), its result expired (`expired`), or the --field asked for is empty (`empty_field`, with the reason); 3 no such job.',
  );
}
