/**
 * The `zyte` adapter against a real loopback Jobs API whose `run.json` answers a 2xx that is not
 * Zyte's own (a proxy's HTML page, an empty or cut body, JSON without `status`). Only a
 * `{"status": "error"|"badrequest"}` body is Zyte refusing the job; any other 2xx we cannot read
 * may come from a server that scheduled the job, so the submit is ambiguous (reconciled by our
 * tag), never a permanent refusal that fails the job while the Scrapy Cloud job runs and bills.
 * The tag list, read after a lost submit or a duplicate refusal, proves our job absent only when
 * nothing it shows may be ours: a job with our tag but no readable job ID, or one listed without
 * its tags (the reference's examples always show `tags`, but no field list promises them), keeps
 * the question open.
 */
import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/shared/errors.js';
import type { SubmitContext } from '../../src/providers/adapter.js';
import { ZyteAdapter, zyteProvider } from '../../src/providers/zyte/index.js';
import { FIXTURE_KEYS } from '../fixtures/providers/harness.js';
import { serveCannedAnswers } from '../helpers/answers.js';

/** What the server answers to `run.json`, by the URL's path under `/as/<name>/`. */
const ANSWERS: Record<string, { type: string; body: string }> = {
  html: { type: 'text/html', body: '<html><body><h1>200 OK</h1>Request accepted</body></html>' },
  empty: { type: 'application/json', body: '' },
  cut: { type: 'application/json', body: '{"status": "ok", "jobid": "123/1/' },
  nostatus: { type: 'application/json', body: '{"jobid": "123/1/7"}' },
};

/**
 * What the server answers to `jobs/list.json`, by the URL's path under `/list/<name>/` (`TAG` is
 * replaced by the tag asked for): the answer for every state asked, or — where the list shows a job
 * in one state ({@link LISTED_IN}) — for that state, the other states answering an empty list.
 */
const LISTED_IN: Record<string, string> = {
  unnamed: 'pending',
  untagged: 'pending',
  untaggednoid: 'running',
  other: 'pending',
  cut: 'running',
};
const LISTS: Record<string, string> = {
  nojobs: '{"status": "ok", "count": 0}',
  unnamed: '{"status": "ok", "count": 1, "jobs": [{"id": "pending-job", "state": "pending", "tags": ["TAG"]}]}',
  empty: '{"status": "ok", "count": 0, "total": 0, "jobs": []}',
  untagged: '{"status": "ok", "count": 1, "jobs": [{"id": "123/1/9", "state": "pending"}]}',
  untaggednoid: '{"status": "ok", "count": 1, "jobs": [{"state": "running"}]}',
  other: '{"status": "ok", "count": 1, "jobs": [{"id": "123/1/8", "state": "pending", "tags": ["someone-else"]}]}',
  // One page of more: `total` counts every job the filters match, `jobs` holds at most `count`.
  cut: '{"status": "ok", "count": 1, "total": 14, "jobs": [{"id": "123/1/8", "state": "running", "tags": ["someone-else"]}]}',
};

/** What the server answers to `jobs/stop.json`, by the URL's path under `/stop/<name>/`. */
const STOPS: Record<string, { status: number; body: string }> = {
  zyte: { status: 400, body: '{"status": "badrequest", "message": "Job 123/1/7 is not running"}' },
  legacy: { status: 200, body: '{"status": "error", "message": "Job 123/1/7 is not running"}' },
  gateway: { status: 502, body: '{"message": "upstream already closed the connection"}' },
  proxy: { status: 200, body: '{"message": "request already forwarded"}' },
};

const base = serveCannedAnswers((req) => {
  const url = req.url ?? '';
  const stop = /^\/stop\/([a-z]+)\/jobs\/stop\.json/.exec(url);
  if (stop) return STOPS[stop[1]!]!;
  // Under /list/, run.json refuses the job as a twin of a pending one (Zyte's duplicate refusal).
  if (/^\/list\/[a-z]+\/run\.json/.test(url))
    return { status: 400, body: '{"status": "error", "message": "quotes already scheduled"}' };
  const listed = /^\/list\/([a-z]+)\/jobs\/list\.json/.exec(url);
  if (listed) {
    const query = new URL(url, 'http://x').searchParams;
    const shownIn = LISTED_IN[listed[1]!];
    if (shownIn && query.get('state') !== shownIn) return { body: '{"status": "ok", "count": 0, "jobs": []}' };
    return { body: (LISTS[listed[1]!] ?? '{}').replace('TAG', query.get('has_tag') ?? '') };
  }
  const name = /^\/as\/([a-z]+)\//.exec(url)?.[1] ?? '';
  return ANSWERS[name] ?? { body: '{"status": "error", "message": "unexpected"}' };
});

function adapter(name: string, under = 'as', more: Record<string, unknown> = {}): ZyteAdapter {
  const entry = zyteProvider.entrySchema.parse({
    kind: 'zyte',
    credentials: {},
    baseUrl: `${base()}/${under}/${name}`,
    storageUrl: `${base()}/storage`,
    project: 123,
    spider: 'quotes',
    ...more,
  });
  return new ZyteAdapter('zyte', entry);
}

const submitCtx = (ref: string): SubmitContext => ({
  apiKey: FIXTURE_KEYS.acme,
  secrets: [],
  idempotencyKey: ref,
  clientRef: ref,
});

describe('zyte: a 2xx run.json answer that is not Zyte’s', () => {
  for (const name of Object.keys(ANSWERS)) {
    it(`${name}: the submit is ambiguous (the job may exist), never a permanent refusal`, async () => {
      let err: unknown;
      try {
        await adapter(name).submit(
          { url: `https://q.example/${name}`, format: 'markdown', options: {} },
          submitCtx(`ref-${name}`),
        );
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ProviderError);
      expect((err as ProviderError).kind).toBe('ambiguous');
      expect((err as ProviderError).details.httpStatus).toBe(200);
    });
  }
});

describe('zyte: a lost submit’s list read proves absence only from a list Zyte answered', () => {
  const find = (name: string) =>
    adapter(name, 'list').findSubmitted({
      ...submitCtx(`ref-${name}`),
      request: { url: `https://q.example/${name}`, format: 'markdown', options: {} },
      submittedAfter: new Date().toISOString(),
    });

  it('a 200 {"status": "ok"} without `jobs` is an unexpected answer (tried again), never an empty list', async () => {
    const err = await find('nojobs').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).kind).toBe('transient');
  });

  it('a job carrying our tag without a job ID we can read leaves the list incomplete: it never proves our job absent', async () => {
    const [reading] = await find('unnamed');
    expect(reading).toMatchObject({ available: true, complete: false, candidates: [] });
    expect(reading!.note).toMatch(/without a job ID we can read/);
  });

  it('a duplicate refusal of a submit carrying our reference keeps its proof that our job exists when the list is unreadable', async () => {
    // The refusal names a twin with the same arguments, our reference among them: our job exists.
    // Losing that to a transient list error would let a retry submit a second, paid job.
    const err = await adapter('nojobs', 'list')
      .submit({ url: 'https://q.example/twin', format: 'markdown', options: {} }, submitCtx('ref-twin'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).kind).toBe('ambiguous');
    expect((err as ProviderError).details.provesExistence).toBe(true);
    expect((err as ProviderError).message).toMatch(/the list unreadable/);
  });

  it('an empty `jobs` list is a complete reading with no candidate', async () => {
    const [reading] = await find('empty');
    expect(reading).toMatchObject({ available: true, complete: true, candidates: [] });
  });

  it('a job listed for our tag without its tags may be ours: an unreadable candidate (never adopted, never "not ours"); without a job ID too, the reading is incomplete', async () => {
    const [named] = await find('untagged');
    expect(named).toMatchObject({ available: true, complete: true });
    expect(named!.candidates).toEqual([
      expect.objectContaining({ taskId: '123/1/9', match: 'unreadable', providerStatus: 'pending' }),
    ]);
    const [unnamed] = await find('untaggednoid');
    expect(unnamed).toMatchObject({ available: true, complete: false, candidates: [] });
    expect(unnamed!.note).toMatch(/without a job ID we can read/);
    // A job whose listed tags leave ours out is not ours: the reading stays complete and empty.
    expect((await find('other'))[0]).toMatchObject({ available: true, complete: true, candidates: [] });
  });

  it('a page with more jobs behind it than it shows (its total above them) is an incomplete reading, even when what it shows is not ours', async () => {
    const [cut] = await find('cut');
    expect(cut).toMatchObject({ available: true, complete: false, candidates: [] });
    expect(cut!.note).toMatch(/more jobs for tag .* than one page shows \(running\)/);
  });
});

describe('zyte: a duplicate refusal’s twin is proved someone else’s only by a list that shows nothing of ours', () => {
  const submit = (name: string, more: Record<string, unknown> = {}): Promise<ProviderError> =>
    adapter(name, 'list', more)
      .submit({ url: `https://q.example/${name}`, format: 'markdown', options: {} }, submitCtx(`ref-${name}`))
      .then(
        (accepted) => {
          throw new Error(`expected a refusal, got ${JSON.stringify(accepted)}`);
        },
        (e: unknown) => e as ProviderError,
      );
  const noRef = { refArgument: null };

  it('a twin listed with our tag but no job ID we can read proves our job exists, with or without our reference among the arguments', async () => {
    for (const more of [{}, noRef]) {
      const err = await submit('unnamed', more);
      expect(err).toBeInstanceOf(ProviderError);
      expect(err).toMatchObject({ kind: 'ambiguous', details: { provesExistence: true } });
      expect(err.message).toMatch(/1 job\(s\) tagged scrape-ref-ref-unnamed are listed without a job ID we can read/);
    }
  });

  it('without our reference, a job listed for our tag without its tags may be the twin and ours: ambiguous (reconciled), not a retry', async () => {
    const err = await submit('untagged', noRef);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err.kind).toBe('ambiguous');
    expect(err.details.provesExistence).toBeUndefined();
    expect(err.message).toMatch(/listed without their tags: 123\/1\/9, which may be ours/);
    // A list showing only others' jobs is what lets the submit be tried again later.
    expect(await submit('other', noRef)).toMatchObject({ kind: 'transient', details: { code: 'ALREADY_SCHEDULED' } });
    // Unless the page has more behind it: the twin may be among the jobs it does not show.
    expect(await submit('cut', noRef)).toMatchObject({ kind: 'ambiguous' });
  });
});

describe('zyte: only Zyte’s own refusal of a cancel says the job is past stopping', () => {
  const cancel = (name: string) => adapter(name, 'stop').cancel('123/1/7', { apiKey: FIXTURE_KEYS.acme, secrets: [] });

  it('400 {"status": "badrequest", "message": "… is not running"}: already final, nothing to stop', async () => {
    expect(await cancel('zyte')).toEqual({ accepted: false, alreadyFinal: true });
  });

  it('the same refusal under a 200, as the legacy API sends it: already final too', async () => {
    expect(await cancel('legacy')).toEqual({ accepted: false, alreadyFinal: true });
  });

  for (const name of ['gateway', 'proxy'])
    it(`${name}: an answer without Zyte's status that says "already" is an error, not a final job`, async () => {
      await expect(cancel(name)).rejects.toBeInstanceOf(ProviderError);
    });
});
