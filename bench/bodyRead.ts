/**
 * Benchmark: the memory one provider body read costs (`providerFetch` in
 * `src/providers/shared/exchange.ts`: the body streamed up to its cap, decoded as UTF-8, parsed as
 * JSON, its evidence built), for a 32 MiB body (the default cap) and a 256 MiB one (the largest
 * `results.maxBytes`).
 *
 * This process runs a real HTTP server on a loopback port answering a result page of the size
 * asked (`{"html":"…"}`, or with `--shapes text` a body that is not JSON, to see the read alone;
 * mostly ASCII with a two-byte character every 1 KiB) in 64 KiB writes, with a `content-length` or
 * chunked (`--framing`). Each read runs in its own **child
 * process** (`--expose-gc`, collected before it starts) that makes the one call with a cap of the
 * body's size and reports, from its own `/proc/self/status`, its peak resident set over the call
 * (`VmHWM` minus `VmRSS` before it: what the read added at its worst), and from
 * `process.memoryUsage()` sampled every 5 ms the peak of `arrayBuffers` (Buffers and the stream's
 * chunks, outside the JS heap) and of `heapUsed` over their values before the call. Samples miss
 * what happens between two turns of the event loop, so `VmHWM` is the figure to trust; the two
 * others say where the memory was. A measurement, not a test: it asserts nothing.
 *
 *   npx tsx bench/bodyRead.ts [--sizes-mib 32,256] [--shapes json,text] [--framing length,chunked] [--runs 2]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Command } from 'commander';
import { z } from 'zod';
import { providerFetch } from '../src/providers/shared/exchange.js';
import { round } from './lib/proc.js';
import { machine, REPO, runAsScript, table, writeResult } from './lib/report.js';

const MIB = 1024 * 1024;

/** What one child reports (MiB, ms). */
interface ChildFigures {
  peakRssMiB: number;
  peakArrayBuffersMiB: number;
  peakHeapUsedMiB: number;
  textMiB: number;
  ms: number;
}

/** A result page of exactly `bytes` bytes, `{"html":"…"}` (`json`) or not JSON (`text`), with a `é` (2 bytes) every 1 KiB. */
function page(bytes: number, shape: 'json' | 'text'): Buffer {
  const buf = Buffer.alloc(bytes, 'a');
  buf.write(shape === 'json' ? '{"html":"' : '<html>   ', 0, 'latin1');
  for (let at = 1024; at + 2 < bytes - 2; at += 1024) buf.write('é', at, 'utf8');
  buf.write(shape === 'json' ? '"}' : '\n\n', bytes - 2, 'latin1');
  return buf;
}

/** Serves `body` to every GET, in 64 KiB writes (each after the previous one drained), with or without `content-length`. */
async function serve(body: Buffer, framing: 'length' | 'chunked'): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(framing === 'length' ? { 'content-length': String(body.length) } : {}),
    });
    let at = 0;
    const more = (): void => {
      while (at < body.length) {
        const end = Math.min(at + 64 * 1024, body.length);
        const ok = res.write(body.subarray(at, end));
        at = end;
        if (!ok) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/result`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `VmHWM` and `VmRSS` of this process, bytes. */
function procMemory(): { hwm: number; rss: number } {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const kib = (name: string): number =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { hwm: kib('VmHWM'), rss: kib('VmRSS') };
}

/** The child's part: one read of `url` under a cap of `cap` bytes; prints {@link ChildFigures} as JSON. */
async function child(url: string, cap: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('the child needs --expose-gc');
  // A warm-up call on a tiny body loads undici and the code under test before the baseline.
  await providerFetch({
    method: 'GET',
    url: `${url}?warm`,
    timeoutMs: 600_000,
    phase: 'read',
    secrets: [],
    maxBodyBytes: 1,
  }).catch(() => undefined);
  gc();
  const before = procMemory();
  // VmHWM cannot be reset without privileges; the baseline is the RSS now, and the peak only counts
  // once it passes the warm-up's own.
  const mem0 = process.memoryUsage();
  let peakAb = mem0.arrayBuffers;
  let peakHeap = mem0.heapUsed;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakAb = Math.max(peakAb, m.arrayBuffers);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 5);
  const t0 = performance.now();
  const res = await providerFetch({
    method: 'GET',
    url,
    timeoutMs: 600_000,
    phase: 'read',
    secrets: [],
    maxBodyBytes: cap,
  });
  const ms = performance.now() - t0;
  clearInterval(sampler);
  const m = process.memoryUsage();
  peakAb = Math.max(peakAb, m.arrayBuffers);
  peakHeap = Math.max(peakHeap, m.heapUsed);
  const after = procMemory();
  const figures: ChildFigures = {
    peakRssMiB: round((after.hwm - before.rss) / MIB, 1),
    peakArrayBuffersMiB: round((peakAb - mem0.arrayBuffers) / MIB, 1),
    peakHeapUsedMiB: round((peakHeap - mem0.heapUsed) / MIB, 1),
    textMiB: round(res.text.length / MIB, 1),
    ms: Math.round(ms),
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** Runs one child against `url`; resolves with what it printed. */
function runChild(url: string, cap: number): Promise<ChildFigures> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', path.join(REPO, 'bench', 'bodyRead.ts'), '--child', url, '--cap', String(cap)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as ChildFigures)
        : reject(new Error(`child exited ${code}`)),
    );
  });
}

const Options = z.object({
  sizesMib: z.string().transform((s) => s.split(',').map((x) => z.coerce.number().int().positive().parse(x))),
  framing: z.string().transform((s) => s.split(',').map((x) => z.enum(['length', 'chunked']).parse(x))),
  runs: z.coerce.number().int().positive(),
  shapes: z.string().transform((s) => s.split(',').map((x) => z.enum(['json', 'text']).parse(x))),
  child: z.string().optional(),
  cap: z.coerce.number().int().positive().optional(),
});

const program = new Command()
  .description('peak memory of one provider body read (providerFetch) for large result pages')
  .option('--sizes-mib <list>', 'body sizes, MiB', '32,256')
  .option('--framing <list>', 'length (content-length) and/or chunked', 'length,chunked')
  .option('--shapes <list>', 'json (parsed after the read) and/or text (not JSON: the read alone)', 'json')
  .option('--runs <n>', 'reads per size and framing (each in a fresh child)', '2')
  .option('--child <url>', '(internal) run one read in this process')
  .option('--cap <bytes>', '(internal) the child read cap');

runAsScript('bodyRead.ts', program, async (raw) => {
  const o = Options.parse(raw);
  if (o.child) return child(o.child, o.cap ?? Number.MAX_SAFE_INTEGER);
  const rows: (string | number)[][] = [];
  const results: Record<string, unknown>[] = [];
  for (const mib of o.sizesMib)
    for (const shape of o.shapes) {
      const body = page(mib * MIB, shape);
      for (const framing of o.framing) {
        const server = await serve(body, framing);
        try {
          for (let run = 1; run <= o.runs; run++) {
            const f = await runChild(server.url, body.length);
            results.push({ mib, shape, framing, run, ...f });
            rows.push([
              `${mib} MiB`,
              shape,
              framing,
              run,
              f.peakRssMiB,
              f.peakArrayBuffersMiB,
              f.peakHeapUsedMiB,
              f.ms,
            ]);
          }
        } finally {
          await server.close();
        }
      }
    }
  console.log(
    table(
      ['body', 'shape', 'framing', 'run', 'peak RSS +MiB', 'peak arrayBuffers +MiB', 'peak heapUsed +MiB', 'ms'],
      rows,
    ),
  );
  const file = writeResult('bodyRead', { machine: machine(), node: process.version, results });
  console.log(`written ${path.relative(REPO, file)}`);
});
