/**
 * Results fidelity, the pure parts: document identities (provider ID, else canonical URL with the
 * absolute position, else URL with a content hash), positions reported by the pagination helpers,
 * an empty page that announces its own position read again (bounded), the text and title of a PDF
 * made in the test, binary bodies recognised and sized against the limits, the content note of
 * a result without usable content, and of one with fewer documents than the provider counts; the
 * row of a multi-document result describes the submitted URL's document.
 */
import { describe, expect, it } from 'vitest';
import { binaryBody, canonicalUrl, documentIdentity } from '../../src/model/documents.js';
import { decodeBase64, isPdf, pdfText, sniffMediaType, withBinaryText } from '../../src/providers/shared/binaryText.js';
import { firecrawlDocument } from '../../src/providers/firecrawl/results.js';
import { pageFromRaw } from '../../src/providers/shared/htmlPage.js';
import { documentFromItem } from '../../src/providers/shared/itemDocuments.js';
import {
  EMPTY_PAGE_REREADS,
  enforceResultLimits,
  jsonBytes,
  paginateCursor,
  paginateNextLink,
  paginateOffset,
  completenessOf,
  resultFromDocuments,
} from '../../src/providers/shared/pagination.js';
import { contentNoteOf, isPartial, uniqueDocuments, type ResultPayload } from '../../src/model/results.js';
import { makePdf } from '../helpers/pdf.js';

const limits = { maxDocuments: 1_000, maxBytes: 10 * 1024 * 1024, pageSize: 3 };
const common = { provider: 'p', taskId: 't', limits };
const page = (over: Partial<ResultPayload> = {}): ResultPayload => ({
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
  links: [],
  contentLength: null,
  ...over,
});

describe('document identity', () => {
  it('prefers the provider’s ID, then the canonical URL with the position, then the URL with a content hash', () => {
    const doc = { url: 'HTTPS://Example.COM:443/a/../b?q=1', title: 'T' };
    expect(canonicalUrl(doc.url)).toBe('https://example.com/b?q=1');
    expect(documentIdentity(doc, { providerId: 'scr-1', position: 4 })).toBe('id:scr-1');
    expect(documentIdentity(doc, { position: 4 })).toBe('pos:https://example.com/b?q=1#4');
    const hashed = documentIdentity(doc);
    expect(hashed).toMatch(/^sha256:https:\/\/example\.com\/b\?q=1#[0-9a-f]{64}$/);
    // Same content under another spelling of the URL: the same identity; other content: another.
    expect(documentIdentity({ url: 'https://example.com/b?q=1', title: 'T' })).toBe(hashed);
    expect(documentIdentity({ ...doc, title: 'U' })).not.toBe(hashed);
    expect(documentIdentity({ url: 'not a url' }, { position: 0 })).toBe('pos:not a url#0');
  });

  it('dataset items: the item’s own key field is the identity (kept out of data), else URL and position', () => {
    const keyed = documentFromItem({ _key: '1/2/3/7', url: 'https://e.x/7', title: 'seven' }, [], {
      idField: '_key',
      position: 7,
    });
    expect(keyed).toMatchObject({
      identity: 'id:1/2/3/7',
      url: 'https://e.x/7',
      data: { url: 'https://e.x/7', title: 'seven' },
    });
    expect(keyed.data).not.toHaveProperty('_key');
    expect(documentFromItem({ url: 'https://e.x/7' }, [], { position: 7 }).identity).toBe('pos:https://e.x/7#7');
  });

  it('the store keeps the first document of each identity, in order', () => {
    const docs = ['a', 'b', 'b', 'c', 'c', 'd'].map((k, i) => ({
      url: `https://e.x/${k}`,
      title: `${k}${i}`,
      identity: `id:${k}`,
    }));
    expect(uniqueDocuments(docs).map((d) => d.title)).toEqual(['a0', 'b1', 'c3', 'd5']);
    // Without identities: identical content twice is one document, different content two.
    expect(
      uniqueDocuments([
        { url: 'https://e.x/', title: 'x' },
        { url: 'https://e.x/', title: 'x' },
        { url: 'https://e.x/', title: 'y' },
      ]),
    ).toHaveLength(2);
  });
});

describe('pagination positions and empty pages', () => {
  const items = Array.from({ length: 8 }, (_, i) => ({ i }));

  it('offset paging maps each item with offset + index; a filtered page reports no positions', async () => {
    const seen = await paginateOffset({
      ...common,
      map: (it: { i: number }, pos) => ({ ...it, pos }),
      fetch: async (offset, limit) => ({ items: items.slice(offset, offset + limit) }),
    });
    expect(seen.map((x) => x.pos)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const filtered = await paginateOffset({
      ...common,
      map: (_it, pos) => pos,
      fetch: async (offset, limit) => ({ items: items.slice(offset, offset + limit), positions: false }),
    });
    expect(filtered.every((p) => p === null)).toBe(true);
  });

  it('cursor and next-link pages place items at the start they report (Bright Data parts, Firecrawl skip)', async () => {
    const byCursor = await paginateCursor({
      ...common,
      map: (_it, pos) => pos,
      fetch: async (cursor) => {
        const part = cursor ? Number(cursor) : 1;
        return {
          items: items.slice((part - 1) * 3, part * 3),
          start: (part - 1) * 3,
          cursor: part < 3 ? String(part + 1) : null,
        };
      },
    });
    expect(byCursor).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const unknown = await paginateCursor({
      ...common,
      map: (_it, pos) => pos,
      fetch: async () => ({ items: items.slice(0, 2), cursor: null }),
    });
    expect(unknown).toEqual([null, null]);
  });

  it('an empty page that names its own position as next is read again and the stream goes on; past the bound it is a loop', async () => {
    let emptyServed = false;
    const got = await paginateNextLink({
      ...common,
      firstUrl: 'https://p/x?skip=0',
      fetch: async (url) => {
        const skip = Number(new URL(url).searchParams.get('skip'));
        if (skip === 6 && !emptyServed) {
          emptyServed = true;
          return { items: [], next: url, start: skip };
        }
        const next = skip + 3 < items.length ? `https://p/x?skip=${skip + 3}` : null;
        return { items: items.slice(skip, skip + 3), next, start: skip };
      },
    });
    expect(got).toEqual(items);
    const forever = paginateNextLink({
      ...common,
      firstUrl: 'https://p/x',
      fetch: async (url) => ({ items: [], next: url }),
    });
    await expect(forever).rejects.toMatchObject({ details: { code: 'PAGINATION_LOOP' } });
    let reads = 0;
    await paginateNextLink({
      ...common,
      firstUrl: 'https://p/x',
      fetch: async (url) => ({ items: [], next: ++reads > EMPTY_PAGE_REREADS ? null : url }),
    });
    expect(reads).toBe(EMPTY_PAGE_REREADS + 1);
  });

  it('a binary body counts its bytes against maxBytes, not their JSON rendering', () => {
    const bytes = Buffer.alloc(1_000, 7);
    expect(jsonBytes({ body: { bytes } })).toBeLessThan(1_100);
    const result = { ...page({ title: 'file' }), body: binaryBody(bytes, 'application/pdf') };
    expect(() => enforceResultLimits(result, { ...limits, maxBytes: 900 }, 'p', 't')).toThrow(
      /RESULT_TOO_LARGE|more than 900 bytes/,
    );
    expect(enforceResultLimits(result, { ...limits, maxBytes: 2_000 }, 'p', 't')).toBe(result);
  });

  it('a one-document result can fill its row from the document (Bright Data one-record snapshot)', () => {
    const doc = { url: 'https://e.x/', title: 'T', markdown: '# T\n\nbody', text: 'T body' };
    expect(resultFromDocuments([doc], 'https://e.x/', { singleFillsRow: true })).toMatchObject({
      title: 'T',
      markdown: '# T\n\nbody',
      text: 'T body',
      documents: [doc],
    });
    expect(resultFromDocuments([doc], 'https://e.x/')).toMatchObject({ title: 'T', markdown: null, text: null });
  });
});

describe('binary bodies and PDF text', () => {
  const pdf = makePdf({
    title: 'Quarterly report (Q3)',
    pages: [
      ['First paragraph *line*.', 'It goes on here.'],
      ['# Not a heading', 'Second page.'],
    ],
  });

  it('recognises a PDF by its bytes and base64 only when the whole string is base64', () => {
    expect(sniffMediaType(pdf)).toBe('application/pdf');
    expect(isPdf(binaryBody(pdf, 'application/octet-stream'))).toBe(true);
    expect(isPdf(binaryBody(pdf, 'image/png'))).toBe(false);
    expect(decodeBase64(pdf.toString('base64'))?.equals(pdf)).toBe(true);
    expect(decodeBase64('# Parsed text of a page.')).toBeNull();
    expect(decodeBase64('')).toBeNull();
  });

  it('extracts the text per page, plain Markdown paragraphs and the title of a PDF made in the test', async () => {
    const out = await pdfText(pdf);
    expect(out).toMatchObject({ title: 'Quarterly report (Q3)', pages: 2 });
    expect(out.text).toBe('First paragraph *line*.\nIt goes on here.\n\n# Not a heading\nSecond page.');
    // Markdown that renders as the same plain text: emphasis marks and a heading mark escaped.
    expect(out.markdown).toBe('First paragraph \\*line\\*. It goes on here.\n\n\\# Not a heading Second page.');
    expect((await pdfText(makePdf({ pages: [['untitled']] }))).title).toBeNull();
  });

  it('a raw page relayed as bytes: HTML is extracted, a PDF kept as bytes with size and SHA-256, then given its text', async () => {
    const html = pageFromRaw({
      url: 'https://e.x/',
      body: null,
      bytes: Buffer.from('<html><head><title>Hello</title></head><body><p>Hi there.</p></body></html>'),
      contentType: 'text/html; charset=utf-8',
    });
    expect(html).toMatchObject({ title: 'Hello' });
    expect(html.body).toBeUndefined();
    const file = pageFromRaw({
      url: 'https://e.x/r.pdf',
      body: null,
      bytes: pdf,
      contentType: 'application/pdf',
      httpStatus: 200,
    });
    expect(file).toMatchObject({
      title: null,
      text: null,
      markdown: null,
      contentLength: pdf.length,
      body: { contentType: 'application/pdf', size: pdf.length },
    });
    expect(file.body!.sha256).toMatch(/^[0-9a-f]{64}$/);
    const read = await withBinaryText(file);
    expect(read).toMatchObject({ title: 'Quarterly report (Q3)', contentLength: pdf.length });
    expect(read.text).toContain('It goes on here.');
    expect(read.markdown).toContain('Second page.');
    const sniffed = pageFromRaw({ url: 'https://e.x/r', body: null, bytes: pdf });
    expect(sniffed.body?.contentType).toBe('application/pdf');
  });

  it('a PDF that cannot be read keeps its bytes and says why in the content note', async () => {
    const broken = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(200, 0x41)]);
    const out = await withBinaryText(
      pageFromRaw({ url: 'https://e.x/b.pdf', body: null, bytes: broken, contentType: 'application/pdf' }),
    );
    expect(out.body?.size).toBe(broken.length);
    expect(out.text).toBeNull();
    expect(out.contentNote).toMatch(
      /^binary body kept \(application\/pdf, 209 bytes\); its text could not be extracted: /,
    );
  });

  it('Firecrawl with parsers: [] puts the file in markdown as base64: it becomes the document’s body, not Markdown', async () => {
    const b64 = pdf.toString('base64');
    const doc = firecrawlDocument(
      {
        markdown: b64,
        html: b64,
        metadata: {
          title: 'r.pdf',
          sourceURL: 'https://e.x/r.pdf',
          url: 'https://e.x/r.pdf',
          statusCode: 200,
          contentType: 'application/pdf',
          scrapeId: 'scr-9',
        },
      },
      0,
    );
    expect(doc).toMatchObject({
      identity: 'id:scr-9',
      markdown: null,
      body: { contentType: 'application/pdf', size: pdf.length },
    });
    expect(doc.data).not.toHaveProperty('html');
    const parsed = firecrawlDocument(
      {
        markdown: '# r.pdf\n\nParsed text',
        metadata: { contentType: 'application/pdf', sourceURL: 'https://e.x/r.pdf' },
      },
      3,
    );
    expect(parsed).toMatchObject({ markdown: '# r.pdf\n\nParsed text', identity: 'pos:https://e.x/r.pdf#3' });
    expect(parsed.body).toBeUndefined();
    const withText = await withBinaryText(resultFromDocuments([doc], 'https://e.x/r.pdf'));
    expect(withText.documents![0]).toMatchObject({ title: 'Quarterly report (Q3)' });
    expect(withText.documents![0]!.text).toContain('First paragraph');
  });
});

describe('content note', () => {
  it('a result without usable content says what the provider returned; one with content has none', () => {
    expect(contentNoteOf(page(), [])).toBe('empty: the provider returned no content (target HTTP 200)');
    expect(contentNoteOf(page({ markdown: '  \n' }), [])).toMatch(/^empty: /);
    expect(contentNoteOf(page({ markdown: '# x' }), [])).toBeNull();
    expect(contentNoteOf(page({ links: ['https://e.x/a'] }), [])).toBeNull();
    expect(contentNoteOf({ ...page(), body: binaryBody(Buffer.from('x'), 'image/png') }, [])).toBeNull();
    expect(
      contentNoteOf(page(), [
        { url: 'https://e.x/1', error: { code: 'dead_page', message: 'gone' } },
        { url: 'https://e.x/2', error: { message: 'gone' } },
      ]),
    ).toBe('empty: all 2 document(s) are per-document errors (first: dead_page: gone)');
    expect(contentNoteOf(page(), [{ url: 'https://e.x/1' }])).toBe(
      'empty: the provider returned 1 document(s) without content',
    );
    expect(contentNoteOf(page(), [{ url: 'https://e.x/1', data: { price: 3 } }])).toBeNull();
    expect(contentNoteOf({ ...page(), contentNote: 'binary body kept (…)' }, [])).toBe('binary body kept (…)');
  });

  it('a page the target answered with an error status is kept, with a note saying so: never a silent result', () => {
    // Before: a 404 page stored as the result of a `completed` job with no note.
    expect(contentNoteOf(page({ httpStatus: 404, title: 'Not Found', text: 'nothing here' }), [])).toBe(
      'target error: the target answered HTTP 404: the content is its error page',
    );
    expect(contentNoteOf(page({ httpStatus: 403, markdown: '# Blocked', contentNote: 'binary body kept' }), [])).toBe(
      'binary body kept; target error: the target answered HTTP 403: the content is its error page',
    );
    expect(contentNoteOf(page({ httpStatus: 404 }), [])).toBe(
      'empty: the provider returned no content (target HTTP 404)',
    );
    expect(contentNoteOf(page({ httpStatus: 301, markdown: '# Moved' }), [])).toBeNull();
  });
});

describe('completeness', () => {
  const doc = (u: string, extra: Record<string, unknown> = {}) => ({ url: `https://e.x/${u}`, title: u, ...extra });

  it('counts distinct documents (repeats once, failures only when the provider counts them) against the provider’s count', () => {
    const docs = [
      doc('a', { identity: 'id:1' }),
      doc('a', { identity: 'id:1' }),
      doc('b'),
      doc('c', { error: { message: 'x' } }),
    ];
    expect(completenessOf(docs, 3, 'P')).toEqual({ expected: 3, kept: 2, counter: 'P' });
    expect(completenessOf(docs, 3, 'P', { countErrors: true })).toEqual({ expected: 3, kept: 3, counter: 'P' });
    expect(completenessOf(docs, null, 'P')).toBeUndefined();
    expect(completenessOf(docs, 9, 'P', { kept: 9, why: 'w' })).toEqual({
      expected: 9,
      kept: 9,
      counter: 'P',
      why: 'w',
    });
  });

  it('a partial result’s note says how many of how many, whose count and why, before any note of its own; more than counted is not partial (a lagging count)', () => {
    const partial = { expected: 121, kept: 86, counter: "Firecrawl's `completed`", why: 'pages repeated' };
    expect(isPartial(partial)).toBe(true);
    expect(contentNoteOf({ ...page({ markdown: '# x' }), completeness: partial }, [])).toBe(
      "partial: kept 86 of the 121 documents Firecrawl's `completed` counts (pages repeated)",
    );
    expect(
      contentNoteOf(
        { ...page(), contentNote: 'binary body kept (…)', completeness: { ...partial, why: undefined } },
        [],
      ),
    ).toBe(
      "partial: kept 86 of the 121 documents Firecrawl's `completed` counts (the provider served no more pages); binary body kept (…)",
    );
    const fresh = { expected: 100, kept: 150, counter: 'total' };
    expect(isPartial(fresh)).toBe(false);
    expect(contentNoteOf({ ...page({ markdown: '# x' }), completeness: fresh }, [])).toBeNull();
  });

  it('the row of a multi-document result describes the document at the submitted URL (a crawl’s start page), else the first without an error', () => {
    const docs = [
      { url: 'https://e.x/late', title: 'Late', httpStatus: 200 },
      { url: 'https://e.x/', finalUrl: 'https://e.x/home', title: 'Start', httpStatus: 203 },
    ];
    expect(resultFromDocuments(docs, 'https://E.x')).toMatchObject({
      url: 'https://E.x',
      title: 'Start',
      finalUrl: 'https://e.x/home',
      httpStatus: 203,
    });
    expect(resultFromDocuments(docs, 'https://e.x/home')).toMatchObject({ title: 'Start' });
    expect(resultFromDocuments(docs, 'https://e.x/other')).toMatchObject({ title: 'Late' });
    expect(
      resultFromDocuments([{ url: 'https://e.x/', error: { message: 'x' } }, ...docs.slice(0, 1)], 'https://e.x/'),
    ).toMatchObject({ title: 'Late' });
  });
});
