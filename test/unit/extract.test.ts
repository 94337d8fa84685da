/**
 * Unit tests of `extractPage` (tools/sim/extract.ts): decoding, Readability fields, links, fallbacks.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { JSDOM } from 'jsdom';
import { Readability } from '@mozilla/readability';
import { describe, expect, it } from 'vitest';
import { encodeLegacy, relabelCharset } from '../../tools/sim/pageServer.js';
import { extractPage, ExtractionError } from '../../src/providers/shared/extract.js';
import { FIXTURE_PAGES_DIR } from '../helpers/pages.js';

/** A page of the repository's subset of the corpus (test/fixtures/pages). */
function corpus(name: string): { html: Buffer; title: string | null } {
  const dir = path.join(FIXTURE_PAGES_DIR, name);
  if (!existsSync(dir)) throw new Error(`no page ${name} in ${FIXTURE_PAGES_DIR}`);
  return {
    html: readFileSync(path.join(dir, 'source.html')),
    title: (JSON.parse(readFileSync(path.join(dir, 'expected-metadata.json'), 'utf8')) as { title: string | null })
      .title,
  };
}

const article = (title: string, body: string, head = ''): string =>
  `<!doctype html><html lang="fr" dir="ltr"><head>${head}<title>${title}</title></head><body><article><h1>${title}</h1>${body}</article></body></html>`;

const longParagraphs = Array.from(
  { length: 6 },
  (_, i) => `<p>Paragraphe ${i}: ${'Le café est très chaud, et la crème brûlée aussi. '.repeat(8)}</p>`,
).join('\n');

describe('extractPage', () => {
  it('returns exactly Readability’s title and metadata for a corpus page', () => {
    const { html, title } = corpus('wikipedia');
    const page = extractPage(html, { url: 'http://fakehost/test/page.html', contentType: 'text/html; charset=utf-8' });
    const reference = new Readability(
      new JSDOM(html, { url: 'http://fakehost/test/page.html', contentType: 'text/html; charset=utf-8' }).window
        .document,
    ).parse();
    expect(page.title).toBe(title);
    expect(page.title).toBe(reference?.title);
    expect(page.excerpt).toBe(reference?.excerpt);
    expect(page.lang).toBe('en');
    expect(page.usedReadability).toBe(true);
    expect(page.readerable).toBe(true);
    expect(page.bytes).toBe(html.length);
    expect(page.length).toBe(page.text.length);
    expect(page.text).not.toMatch(/\s{2,}/);
  }, 30_000);

  it('decodes by the Content-Type charset, which wins over <meta charset>', () => {
    const html = article('Crème brûlée', longParagraphs, '<meta charset="utf-8">');
    const latin1 = Buffer.from(html, 'latin1');
    const page = extractPage(latin1, { url: 'http://example.test/a', contentType: 'text/html; charset=windows-1252' });
    expect(page.title).toBe('Crème brûlée');
    expect(page.text).toContain('Le café est très chaud');
  });

  it('sniffs <meta charset> when the Content-Type has no charset', () => {
    const html = relabelCharset(article('Crème brûlée', longParagraphs), 'windows-1252');
    const bytes = encodeLegacy(html, 'windows-1252');
    expect(bytes.includes(Buffer.from('Crème', 'utf8'))).toBe(false);
    const sniffed = extractPage(bytes, { url: 'http://example.test/a', contentType: 'text/html' });
    expect(sniffed.title).toBe('Crème brûlée');
    const noHeader = extractPage(bytes, { url: 'http://example.test/a' });
    expect(noHeader.title).toBe('Crème brûlée');
  });

  it('decodes a Shift_JIS corpus page from its bytes', () => {
    const { html, title } = corpus('yahoo-4');
    const bytes = encodeLegacy(relabelCharset(html.toString('utf8'), 'shift_jis'), 'shift_jis');
    const page = extractPage(bytes, { url: 'http://example.test/j', contentType: 'text/html' });
    expect(page.title).toBe(title);
  }, 30_000);

  it('collects absolute, deduplicated http(s) links of the original document, fragments removed', () => {
    const body = `${longParagraphs}
      <p><a href="/a">a</a> <a href="b?x=1#frag">b</a> <a href="b?x=1">b again</a>
      <a href="https://other.test/c#top">c</a> <a href="mailto:x@y.z">mail</a>
      <a href="javascript:void(0)">js</a> <a href="#local">local</a> <a href="http://[bad">bad</a></p>`;
    const page = extractPage(Buffer.from(article('Links', body)), { url: 'http://example.test/dir/page.html' });
    expect(page.links).toEqual([
      'http://example.test/a',
      'http://example.test/dir/b?x=1',
      'https://other.test/c',
      'http://example.test/dir/page.html',
    ]);
  });

  it('resolves links against <base href>', () => {
    const html = article('Base', `${longParagraphs}<p><a href="x">x</a></p>`, '<base href="https://cdn.test/root/">');
    const page = extractPage(Buffer.from(html), { url: 'http://example.test/p' });
    expect(page.links).toEqual(['https://cdn.test/root/x']);
  });

  it('produces Markdown with headings and links', () => {
    const body = `<h2>Section</h2>${longParagraphs}<p>See <a href="/more">more</a>.</p>`;
    const page = extractPage(Buffer.from(article('Markdown', body)), { url: 'http://example.test/' });
    expect(page.markdown).toMatch(/^## Section$/m);
    expect(page.markdown).toContain('[more](http://example.test/more)');
  });

  it('falls back to document.title when Readability finds nothing', () => {
    const page = extractPage(Buffer.from('<html><head><title>Only a title</title></head><body></body></html>'), {
      url: 'http://example.test/',
    });
    expect(page.title).toBe('Only a title');
  });

  it('survives a stylesheet that crashes JSDOM’s CSS parser (corpus lazy-image-2)', () => {
    const { html, title } = corpus('lazy-image-2');
    const page = extractPage(html, { url: 'http://fakehost/test/page.html', contentType: 'text/html; charset=utf-8' });
    expect(page.title).toBe(title);
  }, 30_000);

  it('treats text/plain as text and binary types as empty', () => {
    const text = extractPage(Buffer.from('Hello   plain\n\nworld'), {
      url: 'http://example.test/t',
      contentType: 'text/plain; charset=utf-8',
    });
    expect(text).toMatchObject({ title: null, text: 'Hello plain world', mimeType: 'text/plain', links: [] });
    const bin = extractPage(Buffer.from([0, 1, 2, 3]), { url: 'http://example.test/b', contentType: 'image/png' });
    expect(bin.text).toBe('');
  });

  it('treats a malformed Content-Type as HTML', () => {
    const page = extractPage(Buffer.from(article('Odd type', longParagraphs)), {
      url: 'http://example.test/',
      contentType: 'garbage',
    });
    expect(page.title).toBe('Odd type');
    expect(page.mimeType).toBe('text/html');
  });

  it('throws a TypeError for a relative URL', () => {
    expect(() => extractPage(Buffer.from('<p>x</p>'), { url: '/relative' })).toThrow(TypeError);
    expect(ExtractionError.prototype).toBeInstanceOf(Error);
  });
});
