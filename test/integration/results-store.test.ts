/**
 * Results fidelity in the store, on SQLite (a real file) and PostgreSQL (a real server started for
 * the test): one document row per identity however the provider's pages repeat (first occurrence
 * wins, positions dense), binary bodies kept as bytes (blob / `bytea`) with media type, size and
 * SHA-256 and purged with the payload, a result with no usable content completed with its note and
 * a `result_empty` event, a result with fewer documents than the provider counts completed
 * `partial` with its note, the provider's count and a `result_partial` event, and migrations 007
 * and 009 down and up again over rows written before them.
 */
import { createHash } from 'node:crypto';
import { Migrator, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binaryBody } from '../../src/model/documents.js';
import { paginateNextLink, withIdentity } from '../../src/providers/shared/pagination.js';
import { migrationProvider, migrations } from '../../src/store/migrations/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import type { ResultDocument } from '../../src/model/results.js';
import { keepStore } from '../helpers/evidence.js';
import { makePdf } from '../helpers/pdf.js';
import { bothDialects } from '../helpers/postgres.js';
import { countResultDocuments } from '../helpers/storeQueries.js';

const { urlOf } = bothDialects('scrape-results-store-');

const payload = (over: Record<string, unknown> = {}) => ({
  url: 'https://e.x/',
  finalUrl: null,
  httpStatus: 200,
  title: null,
  byline: null,
  excerpt: null,
  lang: null,
  siteName: null,
  publishedTime: null,
  text: null,
  markdown: null,
  links: [] as string[],
  contentLength: null,
  ...over,
});
const job = (id: string) => ({
  id,
  account: 'acme',
  idem_key: id,
  provider: 'p',
  request_hash: 'h',
  url: 'https://e.x/',
  input: '{}',
  options: '{}',
  batch_id: null,
  workflow_id: id,
  task_id: null,
  deadline_at: null,
});

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`results on ${dialect}`, () => {
    let store: Store;
    const url = () => urlOf(dialect, 'results.db');
    beforeAll(async () => {
      store = await openStore(url());
    });
    afterAll(async () => {
      if (store) await keepStore(store, `results-store-${dialect}`); // for the secrets scan
      await store?.close();
    });

    const started = async (id: string) => {
      await store.jobs.register(job(id));
      await store.jobs.recordTaskId(id, `t-${id}`, 'running', 'submit');
    };

    it('pages that each start with the previous page’s last item store one row per document (5 documents over 4 pages, not 8 rows), positions dense', async () => {
      await started('rep');
      // A provider serving 5 documents in pages of 2 where each page after the first starts one back.
      const all = Array.from({ length: 5 }, (_, i) => ({
        id: `scrape-${i}`,
        url: `https://e.x/p/${i}`,
        title: `page ${i}`,
      }));
      const read = await paginateNextLink<(typeof all)[number], ResultDocument>({
        provider: 'p',
        taskId: 't-rep',
        limits: { maxDocuments: 100, maxBytes: 1e6, pageSize: 2 },
        firstUrl: 'https://p/x?skip=0',
        map: (d, position) => withIdentity({ url: d.url, title: d.title }, { providerId: d.id, position }),
        fetch: async (u) => {
          const skip = Number(new URL(u).searchParams.get('skip'));
          const items = all.slice(skip, skip + 2);
          const next = skip + 2 < all.length ? skip + 1 : null;
          return { items, start: skip, next: next === null ? null : `https://p/x?skip=${next}` };
        },
      });
      expect(read).toHaveLength(8); // what the pages held
      const out = await store.results.writeOnce(
        'rep',
        'p',
        't-rep',
        { ...payload({ title: 'crawl' }), documents: read },
        null,
      );
      expect(out).toMatchObject({ inserted: true, documents: 5, contentNote: null });
      expect(await countResultDocuments(store, { jobId: 'rep' })).toBe(5);
      const docs = await store.results.documents('rep', { offset: 0, limit: 100 });
      expect(docs.total).toBe(5);
      expect(docs.documents.map((d) => [d.seq, d.title, d.identity])).toEqual(
        all.map((d, i) => [i, d.title, `id:${d.id}`]),
      );
    });

    it('a second document with the same identity and other content is dropped (first occurrence wins); the unique index refuses a duplicate row', async () => {
      await started('dup');
      const documents = [
        { url: 'https://e.x/a', title: 'first', identity: 'id:A' },
        { url: 'https://e.x/b', title: 'b', identity: 'id:B' },
        { url: 'https://e.x/a', title: 'second', identity: 'id:A' },
      ];
      const out = await store.results.writeOnce('dup', 'p', 't-dup', { ...payload({ title: 'x' }), documents }, null);
      const docs = await store.results.documents('dup', { offset: 0, limit: 10 });
      expect(docs.documents.map((d) => `${d.seq}:${d.title}`)).toEqual(['0:first', '1:b']);
      await expect(
        store.db
          .insertInto('result_documents')
          .values({
            result_id: out.resultId,
            seq: 9,
            identity: 'id:A',
            url: null,
            final_url: null,
            http_status: null,
            title: null,
            markdown: null,
            text: null,
            links: null,
            data: null,
            error: null,
          })
          .execute(),
      ).rejects.toThrow(/unique|UNIQUE/);
    });

    it('a binary body is kept as bytes with its media type, size and SHA-256 (result and document), read back byte for byte, and purged with the payload', async () => {
      await started('bin');
      const pdf = makePdf({ title: 'Report', pages: [['Hello PDF.']] });
      const sha = createHash('sha256').update(pdf).digest('hex');
      const body = binaryBody(pdf, 'application/pdf; name=r.pdf');
      const documents = [{ url: 'https://e.x/r.pdf', title: 'Report', text: 'Hello PDF.', body, identity: 'id:r' }];
      await store.results.writeOnce(
        'bin',
        'p',
        't-bin',
        { ...payload({ title: 'Report', text: 'Hello PDF.', contentLength: pdf.length }), body, documents },
        60_000,
      );
      const row = await store.results.forJob('bin');
      expect(row).toMatchObject({ content_type: 'application/pdf', body_sha256: sha, content_note: null, body: null });
      expect(Number(row!.body_size)).toBe(pdf.length);
      const back = await store.results.body('bin');
      expect(back?.bytes.equals(pdf)).toBe(true);
      expect(back).toMatchObject({ contentType: 'application/pdf', size: pdf.length, sha256: sha });
      expect((await store.results.body('bin', 0))?.bytes.equals(pdf)).toBe(true);
      expect(await store.results.body('bin', 1)).toBeUndefined();
      const [doc] = (await store.results.documents('bin', { offset: 0, limit: 1 })).documents;
      expect(doc).toMatchObject({
        identity: 'id:r',
        body: { contentType: 'application/pdf', size: pdf.length, sha256: sha },
      });
      // Past retention: the bytes go, the evidence (type, size, hash) stays.
      await store.results.purgeExpired(new Date(Date.now() + 120_000));
      expect(await store.results.body('bin')).toBeUndefined();
      expect(await store.results.body('bin', 0)).toBeUndefined();
      expect(await store.results.forJob('bin')).toMatchObject({ body_sha256: sha, content_type: 'application/pdf' });
    });

    it('a result with no usable content completes the job with a content note and a result_empty event; a second writer gets the same note', async () => {
      await started('empty');
      const out = await store.results.writeOnce('empty', 'p', 't-empty', { ...payload(), documents: [] }, null);
      expect(out).toMatchObject({
        inserted: true,
        transitioned: true,
        documents: 0,
        contentNote: 'empty: the provider returned no content (target HTTP 200)',
      });
      expect((await store.jobs.get('empty'))?.state).toBe('completed');
      expect((await store.results.forJob('empty'))?.content_note).toBe(out.contentNote);
      const events = await store.findings.timeline('empty');
      expect(events.filter((e) => e.type === 'result_empty').map((e) => JSON.parse(e.detail!))).toEqual([
        { resultId: out.resultId, note: out.contentNote, documents: 0 },
      ]);
      expect(JSON.parse(events.find((e) => e.type === 'state' && e.state === 'completed')!.detail!)).toMatchObject({
        note: out.contentNote,
      });
      const again = await store.results.writeOnce('empty', 'p', 't-empty', { ...payload({ title: 'late' }) }, null);
      expect(again).toMatchObject({ inserted: false, contentNote: out.contentNote });
      expect((await store.findings.timeline('empty')).filter((e) => e.type === 'result_empty')).toHaveLength(1);
    });

    it('a result with fewer documents than the provider counts completes partial: the note says how many of how many and why, the row keeps the count, a result_partial event, the outbox says partial; a second writer gets the same', async () => {
      await started('partial');
      const documents = [0, 1, 1, 2].map((i) =>
        withIdentity({ url: `https://e.x/${i}`, title: `P${i}` }, { providerId: i }),
      );
      const completeness = { expected: 5, kept: 3, counter: 'the provider’s count', why: 'its pages repeated' };
      const out = await store.results.writeOnce(
        'partial',
        'p',
        't-partial',
        { ...payload(), documents, completeness },
        null,
      );
      const note = 'partial: kept 3 of the 5 documents the provider’s count counts (its pages repeated)';
      expect(out).toMatchObject({
        inserted: true,
        transitioned: true,
        documents: 3,
        contentNote: note,
        partial: true,
        expectedDocuments: 5,
      });
      expect((await store.jobs.get('partial'))?.state).toBe('completed');
      expect(await store.results.forJob('partial')).toMatchObject({ content_note: note, expected_documents: 5 });
      expect(Number((await store.results.forJob('partial'))!.partial)).toBe(1);
      const events = await store.findings.timeline('partial');
      expect(events.filter((e) => e.type === 'result_partial').map((e) => JSON.parse(e.detail!))).toEqual([
        {
          resultId: out.resultId,
          note,
          kept: 3,
          expected: 5,
          counter: 'the provider’s count',
          why: 'its pages repeated',
          documents: 3,
        },
      ]);
      expect(JSON.parse(events.find((e) => e.type === 'state' && e.state === 'completed')!.detail!)).toMatchObject({
        note,
        partial: true,
        expectedDocuments: 5,
      });
      const again = await store.results.writeOnce('partial', 'p', 't-partial', { ...payload(), documents }, null);
      expect(again).toMatchObject({ inserted: false, contentNote: note, partial: true, expectedDocuments: 5 });
      // A complete result keeps the provider's count and is not partial.
      await started('whole');
      const whole = await store.results.writeOnce(
        'whole',
        'p',
        't-whole',
        { ...payload(), documents, completeness: { ...completeness, expected: 3 } },
        null,
      );
      expect(whole).toMatchObject({ contentNote: null, partial: false, expectedDocuments: 3 });
      expect((await store.findings.timeline('whole')).filter((e) => e.type === 'result_partial')).toEqual([]);
    });

    it('migration 007 goes down and up again over rows written before it: old documents get legacy identities', async () => {
      const file = urlOf(dialect, 'migrate.db');
      const s = dialect === 'sqlite' ? await openStore(file) : store;
      const migrator = new Migrator({ db: s.db as unknown as Kysely<unknown>, provider: migrationProvider });
      const down = await migrator.migrateTo('006_provider_accounts');
      expect(down.error).toBeUndefined();
      // 007 and every migration after it go down, newest first.
      const after = Object.keys(migrations)
        .filter((n) => n > '006_provider_accounts')
        .sort()
        .reverse();
      expect(after.at(-1)).toBe('007_result_fidelity');
      expect(down.results?.map((r) => [r.migrationName, r.direction, r.status])).toEqual(
        after.map((n) => [n, 'Down', 'Success']),
      );
      // Written by a release before 007: no identity, no body columns.
      const db = s.db as unknown as Kysely<any>;
      await db
        .insertInto('jobs')
        .values({ ...job('old'), state: 'completed', created_at: 'x', updated_at: 'x' })
        .execute();
      await db
        .insertInto('results')
        .values({
          id: 'r-old',
          provider: 'p',
          task_id: 't-old',
          job_id: 'old',
          url: 'https://e.x/',
          written_at: 'x',
          document_count: 2,
        })
        .execute();
      await db
        .insertInto('result_documents')
        .values([
          { result_id: 'r-old', seq: 0, url: 'https://e.x/0' },
          { result_id: 'r-old', seq: 1, url: 'https://e.x/1' },
        ])
        .execute();
      const up = await migrator.migrateToLatest();
      expect(up.error).toBeUndefined();
      const docs = await s.results.documents('old', { offset: 0, limit: 10 });
      expect(docs.documents.map((d) => d.identity)).toEqual(['legacy:0', 'legacy:1']);
      expect(docs.documents.every((d) => d.body === null)).toBe(true);
      // Written before 009: no count of the provider's, not partial.
      expect(docs.result).toMatchObject({ expected_documents: null });
      expect(Number(docs.result!.partial)).toBe(0);
      if (s !== store) await s.close();
    });
  });
}
