/**
 * Hostile batch files, property-based (fast-check, fixed seeds): CSV and JSONL files
 * as bytes — UTF-8 with and without a BOM, UTF-16 LE/BE with their BOMs, Latin-1 bytes, invalid
 * UTF-8, binary bytes, quotes (well-formed, stray, unclosed), embedded delimiters and line breaks,
 * LF/CRLF/CR line endings mixed, fields past the 64 KiB row limit, each of `,` `;` tab `|` as the
 * delimiter — read through `readBatchFile` exactly as `run` reads them.
 *
 * Properties:
 * 1. totality: reading never throws, and every non-blank line is the header, or inside the span of
 *    exactly one row or one error (with its line number); a refused header refuses the file at
 *    the header's line, with no row;
 * 2. each generated row ends as it must: a well-formed row runs at its line (also when a quoted
 *    field spans lines), a row with Latin-1 or invalid UTF-8 bytes, a bad URL, a stray quote or an
 *    over-large field is refused at its line, and the rows after it still run;
 * 3. re-running creates nothing new, at the key level: the same bytes give the same keys and batch
 *    ID, and so does the same file saved in another encoding or with other line endings (the key
 *    is derived from the row's content; the workflow ID is built from the key and started with
 *    USE_EXISTING, so equal keys are the same jobs — the real-stack check of that is
 *    `test/integration/hostile-files.test.ts`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { readBatchFile, type BatchInput } from '../../src/batch/input.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'batch-props-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;
function read(bytes: Uint8Array, ext: '.csv' | '.jsonl', delimiter?: string): BatchInput {
  const file = path.join(dir, `f${fileNo++}${ext}`);
  fs.writeFileSync(file, bytes);
  try {
    return readBatchFile(file, delimiter ? { delimiter } : {});
  } finally {
    fs.rmSync(file);
  }
}

type Encoding = 'utf8' | 'utf8-bom' | 'utf16le' | 'utf16be';
function encode(text: string, enc: Encoding): Buffer {
  if (enc === 'utf8') return Buffer.from(text, 'utf8');
  if (enc === 'utf8-bom') return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]);
  const le = Buffer.from(`\ufeff${text}`, 'utf16le');
  return enc === 'utf16le' ? le : Buffer.from(le).swap16();
}

/** The lines of what the reader saw (decoded as it decodes), to check that each is accounted for. */
function decodedLines(bytes: Uint8Array): string[] {
  const b = Buffer.from(bytes);
  const text =
    b[0] === 0xff && b[1] === 0xfe
      ? b.subarray(2).toString('utf16le')
      : b[0] === 0xfe && b[1] === 0xff
        ? Buffer.from(b.subarray(2)).swap16().toString('utf16le')
        : b.toString('latin1');
  return text.split(/\r\n|\r|\n/);
}

/** Property 1 on one read: every non-blank line accounted for exactly once. */
function checkAccounted(input: BatchInput, lines: string[], format: 'csv' | 'jsonl'): void {
  const owner = new Map<number, string>();
  const claim = (from: number, to: number, who: string) => {
    expect(from).toBeGreaterThanOrEqual(1);
    expect(to).toBeLessThanOrEqual(Math.max(lines.length, 1));
    for (let n = from; n <= to; n++) {
      expect(owner.get(n), `line ${n} claimed by ${owner.get(n)} and ${who}`).toBeUndefined();
      owner.set(n, who);
    }
  };
  // A file read as UTF-16 without its BOM is refused whole, at line 1 (no line of it can be read).
  if (input.errors.some((e) => e.line === 1 && /UTF-16 without a byte order mark/.test(e.reason))) {
    expect(input.items).toEqual([]);
    expect(input.errors).toHaveLength(1);
    return;
  }
  for (const i of input.items) claim(i.line, i.endLine ?? i.line, `row ${i.line}`);
  for (const e of input.errors) claim(e.line, e.endLine ?? e.line, `error ${e.line}: ${e.reason}`);
  const firstLine = lines.findIndex((l) => l.trim() !== '') + 1;
  if (format === 'csv' && firstLine > 0) {
    const headerError = input.errors.find((e) => e.line === firstLine);
    if (headerError) {
      expect(input.items, `header refused (${headerError.reason}) but rows ran`).toEqual([]);
      return; // a refused header refuses the file, at its line
    }
    owner.set(firstLine, 'header');
  }
  lines.forEach((l, i) => {
    const t = l.replace(/^\ufeff|^\xef\xbb\xbf/, '').trim();
    if (t === '' || (format === 'jsonl' && t.startsWith('#'))) return;
    expect(owner.has(i + 1), `line ${i + 1} (${JSON.stringify(l.slice(0, 80))}) is neither a row nor an error`).toBe(
      true,
    );
  });
  for (const i of input.items) {
    expect(() => new URL(i.url)).not.toThrow();
    expect(i.key).toMatch(/^[A-Za-z0-9._:-]{1,200}$/);
  }
  expect(new Set(input.items.map((i) => i.key)).size).toBe(input.items.length);
}

// ---- property 1: any bytes -------------------------------------------------------------------

/** CSV-ish bytes: fragments that stress the parser (quotes, delimiters, line breaks, bad bytes), mixed with random bytes. */
const csvishBytes = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        'url',
        'url,note',
        'url;note',
        'url\tnote',
        'key',
        'https://a.example/',
        'http://b.example/x?y=1',
        'ftp://c.example/',
        ',',
        ';',
        '\t',
        '|',
        '"',
        '""',
        '"a,b"',
        '"a\nb"',
        'x"y',
        '\n',
        '\r\n',
        '\r',
        ' ',
        '#',
        '{"url":"https://j.example/"}',
        '{',
        '}',
        '\ufeff',
        'é',
        '\u0000',
      ),
      fc.string({ maxLength: 12 }),
    ),
    { maxLength: 40 },
  )
  .chain((parts) =>
    fc.tuple(
      fc.constant(parts.join('')),
      fc.constantFrom<Encoding | 'latin1' | 'raw'>('utf8', 'utf8-bom', 'utf16le', 'utf16be', 'latin1', 'raw'),
      fc.uint8Array({ maxLength: 24 }),
    ),
  )
  .map(([text, enc, noise]) =>
    enc === 'latin1'
      ? Buffer.from(text, 'latin1')
      : enc === 'raw'
        ? Buffer.concat([Buffer.from(text), noise])
        : encode(text, enc),
  );

describe('hostile batch files: totality', () => {
  it('never throws, and accounts for every line of any bytes as CSV (each delimiter) and as JSONL', () => {
    let runs = 0;
    fc.assert(
      fc.property(csvishBytes, fc.constantFrom(',', ';', '\t', '|'), (bytes, delimiter) => {
        runs++;
        const lines = decodedLines(bytes);
        checkAccounted(read(bytes, '.csv', delimiter), lines, 'csv');
        checkAccounted(read(bytes, '.jsonl'), lines, 'jsonl');
      }),
      { seed: 1313, numRuns: 400 },
    );
    expect(runs).toBe(400);
  });

  it('reads pure random bytes without throwing', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2_000 }), (bytes) => {
        const lines = decodedLines(bytes);
        checkAccounted(read(bytes, '.csv'), lines, 'csv');
        checkAccounted(read(bytes, '.jsonl'), lines, 'jsonl');
      }),
      { seed: 1314, numRuns: 200 },
    );
  });
});

// ---- property 2 and 3: generated rows with known fates --------------------------------------

type RowSpec =
  | { kind: 'valid'; note: string }
  | { kind: 'multiline'; note: string }
  | { kind: 'bad-url' }
  | { kind: 'stray-quote' }
  | { kind: 'huge'; size: number }
  | { kind: 'latin1' }
  | { kind: 'invalid-utf8' }
  | { kind: 'blank' };

/** Printable text without quotes or line breaks (a note that needs no quoting but for the delimiter). */
const noteArb = fc.string({ maxLength: 30, unit: fc.constantFrom(...Array.from('abcxyz 0189.-_/:éü€日本😀αβγ')) }); // Array.from: whole code points, never a lone surrogate
const rowArb: fc.Arbitrary<RowSpec> = fc.oneof(
  { weight: 8, arbitrary: noteArb.map((note) => ({ kind: 'valid' as const, note })) },
  { weight: 2, arbitrary: noteArb.map((note) => ({ kind: 'multiline' as const, note })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'bad-url' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'stray-quote' as const }) },
  { weight: 1, arbitrary: fc.integer({ min: 70_000, max: 90_000 }).map((size) => ({ kind: 'huge' as const, size })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'latin1' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'invalid-utf8' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'blank' as const }) },
);
const fileArb = fc.record({
  rows: fc.array(rowArb, { minLength: 1, maxLength: 14 }),
  delimiter: fc.constantFrom(',', ';', '\t', '|'),
  eols: fc.array(fc.constantFrom('\n', '\r\n', '\r'), { minLength: 1, maxLength: 4 }),
  encoding: fc.constantFrom<Encoding>('utf8', 'utf8-bom', 'utf16le', 'utf16be'),
  finalEol: fc.boolean(),
});

interface Built {
  bytes: Buffer;
  /** Line where each row starts (0 for blank rows), and what must happen to it. */
  expect: { line: number; fate: 'runs' | 'refused' | 'none'; reason?: RegExp; url?: string }[];
}

/** Builds a CSV file of `rows` (header `url<d>note`) as bytes; raw-byte rows (Latin-1, invalid UTF-8) only in UTF-8 files. */
function build(
  f: { rows: RowSpec[]; delimiter: string; eols: string[]; encoding: Encoding; finalEol: boolean },
  salt = '',
): Built {
  const d = f.delimiter;
  const utf8 = f.encoding === 'utf8' || f.encoding === 'utf8-bom';
  const parts: (string | Buffer)[] = [];
  const out: Built['expect'] = [];
  let line = 1;
  let k = 0;
  const eol = () => {
    const e = f.eols[k++ % f.eols.length]!;
    // "\r" then "\n" (a blank row between them) is one CRLF break, not two: keep the lines apart.
    return e.startsWith('\n') && parts.at(-1) === '\r' ? '\r' : e;
  };
  const q = (s: string) => (s.includes(d) ? `"${s}"` : s);
  parts.push(`url${d}note`);
  f.rows.forEach((r, i) => {
    parts.push(eol());
    line++;
    const url = `https://site${salt}.example/p/${i}`;
    switch (r.kind) {
      case 'valid':
        parts.push(`${url}${d}${q(r.note)}`);
        out.push({ line, fate: 'runs', url });
        break;
      case 'multiline': {
        const lineBreak = eol();
        parts.push(`${url}${d}"${r.note.replace(/"/g, '')}${lineBreak}""quoted""${d}more"`);
        out.push({ line, fate: 'runs', url });
        line += 1;
        break;
      }
      case 'bad-url':
        parts.push(`ftp://site.example/p/${i}${d}x`);
        out.push({ line, fate: 'refused', reason: /url/ });
        break;
      case 'stray-quote':
        parts.push(`${url}${d}a"b`);
        out.push({ line, fate: 'refused', reason: /CSV cannot be parsed|Quote|quote/ });
        break;
      case 'huge':
        parts.push(`${url}${d}${'x'.repeat(r.size)}`);
        out.push({ line, fate: 'refused', reason: /bytes of JSON/ });
        break;
      case 'latin1':
      case 'invalid-utf8':
        if (utf8) {
          parts.push(
            Buffer.concat([
              Buffer.from(`${url}${d}caf`),
              Buffer.from(r.kind === 'latin1' ? [0xe9] : [0xc3, 0x28, 0xff]),
            ]),
          );
          out.push({ line, fate: 'refused', reason: /not valid UTF-8/ });
        } else {
          parts.push(`${url}${d}café`); // in a UTF-16 file the same row is just text
          out.push({ line, fate: 'runs', url });
        }
        break;
      case 'blank':
        out.push({ line, fate: 'none' });
        break;
    }
  });
  if (f.finalEol) parts.push(eol());
  const bytes = utf8
    ? Buffer.concat([
        ...(f.encoding === 'utf8-bom' ? [Buffer.from([0xef, 0xbb, 0xbf])] : []),
        ...parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)),
      ])
    : encode(parts.map((p) => (typeof p === 'string' ? p : p.toString('latin1'))).join(''), f.encoding);
  return { bytes, expect: out };
}

describe('hostile batch files: every row ends as it must', () => {
  it('well-formed rows run at their line, hostile ones are refused at theirs, in every encoding, delimiter and line ending', () => {
    let rows = 0;
    fc.assert(
      fc.property(fileArb, (f) => {
        const b = build(f);
        const input = read(b.bytes, '.csv', f.delimiter);
        checkAccounted(input, decodedLines(b.bytes), 'csv');
        for (const e of b.expect) {
          rows++;
          if (e.fate === 'runs')
            expect(
              input.items.find((i) => i.line === e.line)?.url,
              `line ${e.line}: ${JSON.stringify(input.errors.find((x) => x.line === e.line))}`,
            ).toBe(e.url);
          if (e.fate === 'refused')
            expect(input.errors.find((x) => x.line === e.line)?.reason, `line ${e.line}`).toMatch(e.reason!);
        }
        // Property 3: the same bytes again, the same jobs.
        const again = read(b.bytes, '.csv', f.delimiter);
        expect(again.items.map((i) => i.key)).toEqual(input.items.map((i) => i.key));
        expect(again.batchId).toBe(input.batchId);
      }),
      { seed: 1315, numRuns: 250 },
    );
    expect(rows).toBeGreaterThan(1_000);
  });

  it('the same rows saved in another encoding or with other line endings make the same keys and batch', () => {
    const portable = fc.record({
      rows: fc.array(
        rowArb.filter((r) => r.kind !== 'latin1' && r.kind !== 'invalid-utf8'),
        { minLength: 1, maxLength: 10 },
      ),
      delimiter: fc.constantFrom(',', ';', '\t', '|'),
      finalEol: fc.boolean(),
    });
    fc.assert(
      fc.property(portable, (f) => {
        const variants = (['utf8', 'utf8-bom', 'utf16le', 'utf16be'] as const).flatMap((encoding) =>
          [['\n'], ['\r\n'], ['\r'], ['\n', '\r\n', '\r']].map((eols) =>
            read(build({ ...f, encoding, eols }).bytes, '.csv', f.delimiter),
          ),
        );
        const [first, ...rest] = variants;
        for (const v of rest) {
          expect(v.items.map((i) => [i.line, i.key])).toEqual(first!.items.map((i) => [i.line, i.key]));
          expect(v.batchId).toBe(first!.batchId);
        }
      }),
      { seed: 1316, numRuns: 60 },
    );
  });

  it('JSONL: every line runs or is refused at its line, duplicate keys included, in every encoding and line ending', () => {
    const lineArb = fc.oneof(
      fc
        .nat(1_000_000)
        .map((n) => ({ text: JSON.stringify({ url: `https://j.example/${n}`, note: 'x' }), fate: 'runs' as const })),
      fc.nat(1_000_000).map((n) => ({
        text: `{"url":"https://j.example/d${n}","url":"https://evil.example/"}`,
        fate: 'refused' as const,
        reason: /duplicate key "url"/,
      })),
      fc.constant({ text: '{"url": "https://j.example/x", ', fate: 'refused' as const, reason: /not valid JSON/ }),
      fc.constant({ text: '["https://j.example/array"]', fate: 'refused' as const, reason: /JSON object/ }),
      fc.constant({ text: '# a comment', fate: 'none' as const }),
      fc.constant({ text: '', fate: 'none' as const }),
    );
    fc.assert(
      fc.property(
        fc.array(lineArb, { minLength: 1, maxLength: 12 }),
        fc.constantFrom<Encoding>('utf8', 'utf8-bom', 'utf16le', 'utf16be'),
        fc.constantFrom('\n', '\r\n', '\r'),
        (lines, enc, eol) => {
          const seen = new Set<string>();
          const unique = lines.filter((l) => l.fate !== 'runs' || (!seen.has(l.text) && seen.add(l.text)));
          const bytes = encode(unique.map((l) => l.text).join(eol), enc);
          const input = read(bytes, '.jsonl');
          checkAccounted(input, decodedLines(bytes), 'jsonl');
          unique.forEach((l, i) => {
            if (l.fate === 'runs')
              expect(input.items.find((x) => x.line === i + 1)?.url).toBe((JSON.parse(l.text) as { url: string }).url);
            if (l.fate === 'refused') expect(input.errors.find((x) => x.line === i + 1)?.reason).toMatch(l.reason);
          });
        },
      ),
      { seed: 1317, numRuns: 200 },
    );
  });
});
