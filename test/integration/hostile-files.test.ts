/**
 * Hostile batch files on the real stack: one CSV file mixing a BOM, CRLF/CR/LF line
 * endings, a quoted field over two lines, Latin-1 bytes, invalid UTF-8, binary bytes, a stray
 * quote, an over-large field and a bad URL, and the same rows saved as UTF-16 LE, are run through
 * `readBatchFile` + `runBatch` exactly as `scrape run` runs them, against a real Temporal dev
 * server, the reference provider over loopback HTTP and a real SQLite store.
 *
 * What users rely on: every good row becomes one provider job and one result row, every bad row
 * is refused with its line number and creates nothing, and running the file again — or the same
 * rows saved in another encoding — creates no new provider job.
 * (`test/unit/batch.properties.test.ts` states the same for generated files, at the parser.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readBatchFile } from '../../src/batch/input.js';
import { runBatch } from '../../src/batch/run.js';
import { fixturePageNames, startPageServer, type PageServer } from '../helpers/pages.js';
import { FAST_POLICY, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
let pages: PageServer;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostile-files-'));

beforeAll(async () => {
  pages = await startPageServer();
  stack = await startStack({ profile: { concurrency: 8, minRunMs: 50 } });
});

afterAll(async () => {
  await stack?.stop();
  await pages?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a hostile batch file on the real stack', () => {
  it('runs every good row once, refuses every bad row at its line, and a re-run or another encoding creates nothing', async () => {
    const good = fixturePageNames()
      .slice(0, 4)
      .map((p) => pages.pageUrl(p));
    const b = (s: string) => Buffer.from(s, 'utf8');
    const bytes = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]), // BOM
      b('url,note\r\n'), // line 1, CRLF
      b(`${good[0]},plain\r`), // line 2, CR
      b(`${good[1]},"two\nlines"\n`), // lines 3–4: a quoted field over two lines
      b(`${good[2]},caf`),
      Buffer.from([0xe9]),
      b('\n'), // line 5: Latin-1 é
      b(`${good[2]},`),
      Buffer.from([0xc3, 0x28, 0x00, 0xff]),
      b('\n'), // line 6: invalid UTF-8 and binary
      b(`${good[2]},a"b\n`), // line 7: a stray quote
      b(`${good[2]},${'x'.repeat(70_000)}\n`), // line 8: a field past the row limit
      b('ftp://files.example/x,bad url\n'), // line 9
      b(`${good[3]},last\n`), // line 10: still runs after all of that
    ]);
    const file = path.join(dir, 'hostile.csv');
    fs.writeFileSync(file, bytes);

    const input = readBatchFile(file);
    expect(input.items.map((i) => [i.line, i.url])).toEqual([
      [2, good[0]],
      [3, good[1]],
      [10, good[3]],
    ]);
    expect(input.items[1]!.endLine).toBe(4);
    const refused = Object.fromEntries(input.errors.map((e) => [e.line, e.reason]));
    expect(Object.keys(refused).map(Number)).toEqual([5, 6, 7, 8, 9]);
    expect(refused[5]).toMatch(/not valid UTF-8/);
    expect(refused[6]).toMatch(/not valid UTF-8/);
    expect(refused[7]).toMatch(/quote/i);
    expect(refused[8]).toMatch(/bytes of JSON/);
    expect(refused[9]).toMatch(/url/);

    const before = stack.sim.stats().jobsCreated.total;
    const run = (items: typeof input.items, batchId: string) =>
      runBatch(stack.client, stack.store, items, {
        account: 'acme',
        batchId,
        policy: FAST_POLICY,
        waitTimeoutMs: 120_000,
        pollIntervalMs: 200,
      });
    const first = await run(input.items, input.batchId);
    expect(first.map((o) => o.state)).toEqual(['completed', 'completed', 'completed']);
    expect(first.every((o) => !o.existed)).toBe(true);
    expect(stack.sim.stats().jobsCreated.total - before).toBe(3);
    for (const o of first) expect(await stack.store.results.count({ jobId: o.jobId! })).toBe(1);

    // The same file again: the same jobs, attached to, nothing created.
    const again = readBatchFile(file);
    expect(again.batchId).toBe(input.batchId);
    const second = await run(again.items, again.batchId);
    expect(second.map((o) => o.jobId)).toEqual(first.map((o) => o.jobId));
    expect(second.every((o) => o.existed)).toBe(true);
    // Without waiting (`run --no-wait`), a re-run still shows each job's state now: completed.
    const noWait = await runBatch(stack.client, stack.store, again.items, {
      account: 'acme',
      batchId: again.batchId,
      policy: FAST_POLICY,
      wait: false,
    });
    expect(noWait.map((o) => o.state)).toEqual(['completed', 'completed', 'completed']);

    // The good rows saved as UTF-16 LE with LF endings: the same keys, the same jobs.
    const utf16 = path.join(dir, 'same-rows-utf16.csv');
    fs.writeFileSync(utf16, Buffer.from(`\ufeffurl,note\n${good[0]},plain\n${good[1]},"two\nlines"\n`, 'utf16le'));
    const other = readBatchFile(utf16);
    expect(other.errors).toEqual([]);
    expect(other.items.map((i) => i.key)).toEqual(input.items.slice(0, 2).map((i) => i.key));
    const third = await run(other.items, other.batchId);
    expect(third.map((o) => o.jobId)).toEqual(first.slice(0, 2).map((o) => o.jobId));
    expect(third.every((o) => o.existed)).toBe(true);

    expect(stack.sim.stats().jobsCreated.total - before).toBe(3);
    for (const o of first) expect(await stack.store.results.count({ jobId: o.jobId! })).toBe(1);
  });
});
