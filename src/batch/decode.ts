/**
 * Decoding of batch input files: the file's bytes to text, line by line, before any parsing.
 *
 * UTF-8 with or without a BOM, or UTF-16 with its BOM (as spreadsheet programs save "Unicode
 * text"); a line that is not valid UTF-8 is named with its reason instead of being read with
 * replacement characters, so the parsers of `input.ts` refuse it with its line number and go on.
 */
/** A batch file's bytes as text (see {@link decodeBatchBytes}). */
export interface DecodedBatch {
  /** The text, line endings kept as they were (the parsers accept LF, CRLF and CR). */
  text: string;
  encoding: 'utf-8' | 'utf-8 with BOM' | 'utf-16le' | 'utf-16be';
  /** Lines that cannot be read (1-based line → reason); they are refused, the others go on. */
  badLines: Map<number, string>;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** True when, in the first 512 bytes, at least half of the even or of the odd positions are NUL: text in UTF-16 (LE or BE) that has no BOM. */
function looksLikeUtf16WithoutBom(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, 512) & ~1;
  if (n < 4) return false;
  let even = 0;
  let odd = 0;
  for (let i = 0; i < n; i += 2) {
    if (bytes[i] === 0) even++;
    if (bytes[i + 1] === 0) odd++;
  }
  return Math.max(even, odd) >= n / 4;
}

/**
 * Reads a batch file's bytes: a UTF-16 BOM (`FF FE` little-endian, `FE FF` big-endian) selects
 * UTF-16 (a file that is not valid UTF-16 is refused at line 1); otherwise UTF-8, with or without
 * a BOM, line by line (a file whose every other byte is NUL — UTF-16 without its BOM — is
 * refused at line 1 with that reason): a line that is not valid UTF-8 (Latin-1 or Windows-1252 bytes, binary
 * data) is refused with its line number and the other lines are read. Line breaks are `\n`,
 * `\r\n` or `\r` (bytes that never occur inside a UTF-8 sequence). Never throws.
 */
export function decodeBatchBytes(bytes: Uint8Array): DecodedBatch {
  const badLines = new Map<number, string>();
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    const encoding = bytes[0] === 0xff ? 'utf-16le' : 'utf-16be';
    try {
      return { text: new TextDecoder(encoding, { fatal: true }).decode(bytes), encoding, badLines };
    } catch {
      badLines.set(
        1,
        `the file starts with a ${encoding.toUpperCase()} byte order mark but is not valid ${encoding.toUpperCase()}: save it as UTF-8`,
      );
      return { text: '', encoding, badLines };
    }
  }
  if (looksLikeUtf16WithoutBom(bytes)) {
    badLines.set(
      1,
      'the file looks like UTF-16 without a byte order mark (every other byte is 0): save it as UTF-8, or as UTF-16 with its BOM',
    );
    return { text: '', encoding: 'utf-8', badLines };
  }
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  const body = bom ? bytes.subarray(3) : bytes;
  const lines: string[] = [];
  let start = 0;
  const take = (end: number) => {
    const chunk = body.subarray(start, end);
    try {
      lines.push(UTF8.decode(chunk));
    } catch {
      const odd = chunk.find((b) => b >= 0x80) ?? 0;
      badLines.set(
        lines.length + 1,
        `not valid UTF-8 (byte 0x${odd.toString(16).toUpperCase().padStart(2, '0')}: Latin-1, Windows-1252 or binary data?); save the file as UTF-8`,
      );
      lines.push(
        Buffer.from(chunk)
          .toString('latin1')
          .replace(/[^\x20-\x7e\t]/g, '?'),
      );
    }
  };
  for (let i = 0; i < body.length; i++) {
    const b = body[i];
    if (b !== 0x0a && b !== 0x0d) continue;
    take(i);
    if (b === 0x0d && body[i + 1] === 0x0a) i++;
    start = i + 1;
  }
  take(body.length);
  return { text: lines.join('\n'), encoding: bom ? 'utf-8 with BOM' : 'utf-8', badLines };
}
