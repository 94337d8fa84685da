/**
 * A small valid PDF made in the test (no binary is committed): one page per entry of `pages`, each
 * a list of text lines in Helvetica, with an information dictionary carrying `title` when given.
 * The cross-reference table holds the real byte offsets, so PDF readers parse it without repair.
 * Test-only code.
 */

/** Escapes a PDF literal string (backslash and parentheses). */
const literal = (s: string) => `(${s.replace(/[\\()]/g, (c) => `\\${c}`)})`;

/** The bytes of a PDF whose pages hold `pages` (lines of Latin-1 text each) and whose `Title` is `title`. */
export function makePdf(opts: { title?: string; pages: string[][] }): Buffer {
  const objects: string[] = [];
  const add = (o: string) => objects.push(o);
  const pageCount = opts.pages.length;
  // 1: catalog, 2: pages, 3: font, then per page its page object and its content stream, then the info.
  add('<< /Type /Catalog /Pages 2 0 R >>');
  const kids = opts.pages.map((_, i) => `${4 + 2 * i} 0 R`).join(' ');
  add(`<< /Type /Pages /Kids [${kids}] /Count ${pageCount} >>`);
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  opts.pages.forEach((lines, i) => {
    const content = [
      'BT',
      '/F1 12 Tf',
      '72 720 Td',
      '16 TL',
      ...lines.map((l, n) => `${n ? 'T* ' : ''}${literal(l)} Tj`),
      'ET',
    ].join('\n');
    add(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + 2 * i} 0 R >>`,
    );
    add(`<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`);
  });
  const info =
    opts.title !== undefined
      ? objects.push(`<< /Title ${literal(opts.title)} /Producer (scrape-orchestrator tests) >>`)
      : 0;
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((o, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R${info ? ` /Info ${info} 0 R` : ''} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
