/**
 * Batch input files: every line is either a job or an error with its line number; nothing a
 * caller sent is dropped silently, and a malformed line never costs the other rows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCsvText, parseJsonlText, readBatchFile } from '../../src/batch/input.js';
import { InvalidInputError } from '../../src/client/errors.js';
import { fingerprint } from '../../src/lib/hash.js';

describe('CSV batches', () => {
  it('runs the good rows and reports each bad one with its line number and reason', () => {
    const { items, errors } = parseCsvText(
      'url,note\nhttps://a.example/,ok\nftp://b.example/,no\n\nhttps://c.example/,"two\nlines"\nhttps://d.example/\nhttps://a.example/,ok\n',
    );
    expect(items.map((i) => [i.line, i.url])).toEqual([
      [2, 'https://a.example/'],
      [5, 'https://c.example/'],
    ]);
    expect(errors.map((e) => [e.line, e.reason])).toEqual([
      [3, expect.stringMatching(/url scheme must be http or https, not ftp/)],
      [7, '1 fields but the header has 2'],
      [8, expect.stringMatching(/duplicate of line 2/)],
    ]);
  });

  it("a rejected line is reported without the credentials it holds (a token of a known shape in any column, a URL's password)", () => {
    // Made-up values, joined at run time so that no scanner of the repository takes them for real ones.
    const token = ['ghp', 'R7k2Lq9Vx4Nm8Pw3Zt6Yb1Hc5Jd0Fg2Ks7A'].join('_');
    const aws = ['AKIA', 'QX7Z2M4N6P5R3T3V'].join('');
    const { errors } = parseCsvText(
      `url,note\nftp://b.example/,${token}\nhttps://u:${'hunter2hunter2'}@c.example/,${aws}\nhttps://c.example/,${aws}\n`,
    );
    expect(errors.map((e) => e.line)).toEqual([2, 3]);
    const shown = JSON.stringify(errors);
    for (const secret of [token, aws, 'hunter2hunter2']) expect(shown).not.toContain(secret);
    expect(errors[0]!.raw).toMatch(/^ftp:\/\/b\.example\/,\[REDACTED\]/);
  });

  it('a rejected line is reported without the values of its secret-named fields (a credential of no known shape)', () => {
    const value = ['hunter', '2', 'secret', 'value', '99'].join('');
    const rejected = [
      parseCsvText(`url,api_key\nnot-a-url,${value}\n`),
      parseCsvText(`url,api_key,note\nhttps://a.example/,${value}\n`), // a field short
      parseJsonlText(JSON.stringify({ url: 'not a url', password: value })),
      parseJsonlText(`{"url":"https://example.com/c","api_key":"${value}",}`), // not valid JSON
    ];
    for (const { errors } of rejected) {
      expect(errors).toHaveLength(1);
      expect(JSON.stringify(errors[0])).not.toContain(value);
    }
    // The row's own `key` column (its idempotency key) stays, in the line and the reason.
    const dup = parseCsvText(
      'url,key\nhttps://shop.example/item-42,item-42\nhttps://shop.example/item-42?x=1,item-42\n',
    );
    expect(dup.errors[0]).toMatchObject({
      raw: 'https://shop.example/item-42?x=1,item-42',
      reason: expect.stringContaining('same key item-42'),
    });
    expect(parseJsonlText('{"url":"ftp://orders.example/a-1","key":"a-1"}').errors[0]!.raw).toContain('"key":"a-1"');
  });

  it('skips a line with broken quoting, reports it, and keeps the rows before and after', () => {
    const { items, errors } = parseCsvText(
      'url,note\nhttps://a.example/,ok\nhttps://b.example/,x"y\nhttps://c.example/,z\n',
    );
    expect(items.map((i) => i.line)).toEqual([2, 4]);
    expect(errors).toEqual([
      expect.objectContaining({ line: 3, reason: expect.stringMatching(/CSV cannot be parsed here/) }),
    ]);
  });

  it('reports an unterminated quote on the last line instead of rejecting the file', () => {
    const { items, errors } = parseCsvText('url,note\nhttps://a.example/,ok\nhttps://b.example/,"unterminated\n');
    expect(items.map((i) => i.line)).toEqual([2]);
    expect(errors).toEqual([
      expect.objectContaining({ line: 3, reason: expect.stringMatching(/field 2 opens a quote that is never closed/) }),
    ]);
  });

  it('an unclosed quote on line 8 is reported at line 8, its reason naming no other line, and the rows around it go on', () => {
    const rows = Array.from({ length: 9 }, (_, i) => `https://a.example/${i + 2},row ${i + 2}`);
    rows[6] = '"https://a.example/8,row 8'; // line 8: the quote opened here is never closed
    const { items, errors } = parseCsvText(['url,note', ...rows, ''].join('\n'));
    expect(items.map((i) => i.line)).toEqual([2, 3, 4, 5, 6, 7, 9, 10]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ line: 8, raw: '"https://a.example/8,row 8' });
    expect(errors[0]!.reason).toBe(
      'CSV cannot be parsed here: field 1 opens a quote that is never closed (a quoted field ends with "; write "" for a quote inside it)',
    );
    // Whatever the quoting mistake, the reason never points at another line.
    for (const bad of ['https://a.example/8,"row 8', 'https://a.example/8,ro"w 8', 'https://a.example/8,"row" 8']) {
      const again = parseCsvText(['url,note', ...rows.slice(0, 6), bad, ...rows.slice(7), ''].join('\n'));
      expect(
        again.errors.map((e) => e.line),
        bad,
      ).toEqual([8]);
      expect(again.errors[0]!.reason, bad).not.toMatch(/line (?!8\b)\d+/);
      expect(again.errors[0]!.reason, bad).toMatch(/field 2/);
    }
  });

  it('loses no row with CRLF or CR line endings, and one stray quote costs only its own line', () => {
    for (const eol of ['\r\n', '\r', '\n']) {
      const text = [
        'url,note',
        'https://a.example/1,ok',
        'https://a.example/2,"x"y',
        'https://a.example/3,ok',
        'https://a.example/4,"unclosed',
        'https://a.example/5,ok',
        '',
      ].join(eol);
      const { items, errors } = parseCsvText(text);
      expect(
        items.map((i) => i.line),
        JSON.stringify(eol),
      ).toEqual([2, 4, 6]);
      expect(
        errors.map((e) => e.line),
        JSON.stringify(eol),
      ).toEqual([3, 5]);
    }
    const tail = parseCsvText(
      'url,note\nhttps://a.example/1,"ok"x\n' +
        Array.from({ length: 8 }, (_, i) => `https://a.example/r${i},fine`).join('\n'),
    );
    expect(tail.items).toHaveLength(8);
    expect(tail.errors.map((e) => e.line)).toEqual([2]);
  });

  it('keeps multi-line quoted fields whole and numbers rows by their first line', () => {
    const { items, errors } = parseCsvText(
      '\n\nurl,note\nhttps://a.example/,"line one\r\nline two"\nhttps://b.example/,x\n',
    );
    expect(errors).toEqual([]);
    expect(items.map((i) => [i.line, i.row.note])).toEqual([
      [4, 'line one\nline two'],
      [6, 'x'],
    ]);
  });

  it('names every line a broken record swallowed, and refuses a row too large to keep', () => {
    const { items, errors } = parseCsvText(
      'url,note\nhttps://a.example/1,ok\nhttps://a.example/2,"open\nhttps://a.example/3,x\nclose",extra\nhttps://a.example/4,ok\n',
    );
    expect(items.map((i) => i.line)).toEqual([2, 6]);
    expect(errors).toEqual([expect.objectContaining({ line: 3, reason: expect.stringMatching(/spans lines 3–5/) })]);
    const big = parseCsvText(`url,note\nhttps://a.example/1,${'x'.repeat(70_000)}\nhttps://a.example/2,ok\n`);
    expect(big.items.map((i) => i.line)).toEqual([3]);
    expect(big.errors).toEqual([
      expect.objectContaining({ line: 2, reason: expect.stringMatching(/at most 65536 are kept/) }),
    ]);
  });

  it('refuses a header without url or with a repeated column', () => {
    expect(parseCsvText('link\nhttps://a.example/\n').errors).toEqual([
      expect.objectContaining({ line: 1, reason: 'the CSV header has no "url" column' }),
    ]);
    expect(parseCsvText('url,url\nhttps://a.example/,https://b.example/\n').errors).toEqual([
      expect.objectContaining({ line: 1, reason: expect.stringMatching(/repeats column\(s\) "url"/) }),
    ]);
  });

  it('refuses a header with a "__proto__" column, whose values no row could keep (as a JSONL row with that key is refused)', () => {
    const { items, errors } = parseCsvText('url,__proto__\nhttps://a.example/1,kept?\n');
    expect(items).toEqual([]);
    expect(errors).toEqual([expect.objectContaining({ line: 1, reason: expect.stringMatching(/"__proto__"/) })]);
  });

  it('derives the same keys from the same rows (re-running a file creates nothing new)', () => {
    const text = 'url,format\nhttps://a.example/,text\nhttps://b.example/,\n';
    expect(parseCsvText(text).items.map((i) => i.key)).toEqual(parseCsvText(text).items.map((i) => i.key));
  });
});

describe('UTF-16 without a byte order mark', () => {
  it('is refused at line 1 with the reason, as CSV and as JSONL (it read as NUL-riddled UTF-8)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'utf16-nobom-'));
    try {
      for (const [name, text] of [
        ['a.csv', 'url,note\nhttps://example.com/,x\n'],
        ['a.jsonl', '{"url":"https://example.com/"}\n'],
      ] as const) {
        for (const bytes of [Buffer.from(text, 'utf16le'), Buffer.from(text, 'utf16le').swap16()]) {
          const file = path.join(dir, name);
          fs.writeFileSync(file, bytes);
          const r = readBatchFile(file);
          expect(r.items).toEqual([]);
          expect(r.errors).toHaveLength(1);
          expect(r.errors[0]).toMatchObject({ line: 1 });
          expect(r.errors[0]!.reason).toMatch(/UTF-16 without a byte order mark/);
        }
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('JSONL batches', () => {
  it('a line nested thousands deep is refused at its line; the rows around it run (it overflowed the stack and ended the run)', () => {
    const deep = `{"url":"https://example.com/deep","x":${'['.repeat(5_000)}${']'.repeat(5_000)}}`;
    const r = parseJsonlText(`{"url":"https://example.com/1"}\n${deep}\n{"url":"https://example.com/3"}\n`);
    expect(r.items.map((i) => i.line)).toEqual([1, 3]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ line: 2 });
    expect(r.errors[0]!.reason).toMatch(/nested 5001 deep; at most 64 levels/);
  });

  it('reports bad JSON and non-object lines by number and keeps the rest', () => {
    const { items, errors } = parseJsonlText(
      '{"url":"https://a.example/"}\n{not json}\n# comment\n[1]\n{"url":"https://b.example/","key":"k-1"}\n',
    );
    expect(items.map((i) => [i.line, i.key])).toEqual([
      [1, expect.stringMatching(/^a\.example-[0-9a-f]{10}$/)],
      [5, 'k-1'],
    ]);
    expect(errors.map((e) => e.line)).toEqual([2, 4]);
  });
});

describe('readable, canonical keys', () => {
  it('derives <host>-<path slug>-<10 hex> from the WHATWG-serialised URL: host case, default port, empty path and IDN spellings are one job', () => {
    const { items, errors } = parseCsvText(
      [
        'url',
        'http://example.com/',
        'HTTP://Example.COM',
        'http://example.com:80',
        'http://bücher.example/katalog',
        'http://xn--bcher-kva.example/katalog',
        'https://example.com:8443/a',
        '',
      ].join('\n'),
    );
    expect(items.map((i) => [i.line, i.key])).toEqual([
      [2, expect.stringMatching(/^example\.com-[0-9a-f]{10}$/)],
      [5, expect.stringMatching(/^xn--bcher-kva\.example-katalog-[0-9a-f]{10}$/)],
      [7, expect.stringMatching(/^example\.com-a-[0-9a-f]{10}$/)],
    ]);
    expect(items[2]!.key).not.toBe(items[0]!.key); // another port and path: another job
    expect(errors.map((e) => [e.line, e.reason])).toEqual([
      [3, expect.stringMatching(/^duplicate of line 2 \(same key example\.com-/)],
      [4, expect.stringMatching(/^duplicate of line 2/)],
      [6, expect.stringMatching(/^duplicate of line 5/)],
    ]);
    // The typed form stays the row's evidence.
    expect(items[1]!.url).toBe('http://bücher.example/katalog');
    expect(items[1]!.row.url).toBe('http://bücher.example/katalog');
  });

  it('keeps the keys a row had before path slugs and before readable keys, so a re-run finds the jobs made then', () => {
    const { items } = parseCsvText(
      'url,note\nHTTP://Example.com/Articles/Poll-Politely.html,x\nHTTP://Example.com,y\n',
    );
    const hash = fingerprint({
      url: 'http://example.com/Articles/Poll-Politely.html',
      format: null,
      provider: null,
      rest: { note: 'x' },
    });
    expect(items[0]!.key).toBe(`example.com-articles-poll-politely-${hash.slice(0, 10)}`);
    expect(items[0]!.formerKeys).toEqual([
      `example.com-${hash.slice(0, 10)}`,
      `row-${fingerprint({ url: 'HTTP://Example.com/Articles/Poll-Politely.html', format: null, provider: null, rest: { note: 'x' } }).slice(0, 32)}`,
    ]);
    // A root path has no slug: its key is the one before path slugs, which is no former key then.
    expect(items[1]!.key).toMatch(/^example\.com-[0-9a-f]{10}$/);
    expect(items[1]!.formerKeys).toEqual([
      `row-${fingerprint({ url: 'HTTP://Example.com', format: null, provider: null, rest: { note: 'y' } }).slice(0, 32)}`,
    ]);
    expect(parseCsvText('url,key\nhttps://a.example/,mine\n').items[0]!.formerKeys).toBeUndefined(); // a given key is the key
  });
});

describe('delimiters and unreadable files', () => {
  it('says that a ;-separated file looks like one and how to pass the delimiter; --delimiter reads it', () => {
    const text = 'url;note\nhttps://a.example/;one\nhttps://b.example/;two\n';
    expect(parseCsvText(text).errors).toEqual([
      expect.objectContaining({
        line: 1,
        reason: 'the CSV header has no "url" column; the delimiter looks like `;`; pass --delimiter \';\'',
      }),
    ]);
    expect(parseCsvText(text).items).toEqual([]);
    const ok = parseCsvText(text, { delimiter: ';' });
    expect(ok.errors).toEqual([]);
    expect(ok.items.map((i) => [i.line, i.url, i.row.note])).toEqual([
      [2, 'https://a.example/', 'one'],
      [3, 'https://b.example/', 'two'],
    ]);
    expect(parseCsvText('url\tnote\nhttps://a.example/\tx\n').errors[0]!.reason).toMatch(
      /looks like a tab; pass --delimiter tab/,
    );
    expect(parseCsvText('link,note\nx,y\n').errors[0]!.reason).toBe('the CSV header has no "url" column');
  });

  it('a missing input file is invalid input that names the file', () => {
    const missing = path.join(os.tmpdir(), `no-such-${process.pid}.csv`);
    expect(() => readBatchFile(missing)).toThrow(InvalidInputError);
    expect(() => readBatchFile(missing)).toThrow(`cannot read input file ${missing}: no such file`);
    expect(() => readBatchFile(os.tmpdir())).toThrow(/it is a directory/);
    const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'batch-')), 'semi.csv');
    fs.writeFileSync(f, 'url;note\nhttps://a.example/;one\n');
    expect(readBatchFile(f, { delimiter: ';' }).items).toHaveLength(1);
  });
});
