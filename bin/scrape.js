#!/usr/bin/env node
/**
 * The `scrape` command (package.json `bin`; `npm run cli`, `npm run demo`, `npm run worker`,
 * `npm run api` go through it). It runs the compiled CLI, `dist/cli.js` (`npm run build`; `npm ci`
 * builds it through the `prepare` script), which starts in well under a second.
 *
 * When `dist/` is missing or older than a file under `src/` (a fresh edit, a `git pull` without
 * a build), it runs the TypeScript source through tsx instead, in this same process, and says so
 * on stderr: slower to start, never stale. Signals reach the CLI directly (no wrapper process).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const compiled = path.join(root, 'dist', 'cli.js');
const source = path.join(root, 'src', 'cli.ts');

/** Newest modification time (ms) of the files under `dir`, 0 when it does not exist. */
function newest(dir) {
  let max = 0;
  let entries;
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    max = Math.max(max, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs);
  }
  return max;
}

function builtAt() {
  try {
    return fs.statSync(compiled).mtimeMs;
  } catch {
    return 0;
  }
}

const built = builtAt();
const fresh = built > 0 && (!fs.existsSync(source) || newest(path.join(root, 'src')) <= built);
let entry = compiled;
if (!fresh) {
  try {
    const { register } = await import('tsx/esm/api');
    register();
    entry = source;
    process.stderr.write(
      `scrape: ${built ? 'src/ changed since the last build' : 'no build yet'}; running the TypeScript source (slower start). \`npm run build\` makes the compiled CLI current.\n`,
    );
  } catch {
    if (!built) {
      process.stderr.write(
        'scrape: dist/cli.js is missing and tsx is not installed: run `npm ci` (it builds) or `npm run build`.\n',
      );
      process.exit(1);
    }
    process.stderr.write(
      'scrape: src/ changed since the last build and tsx is not installed; running the older build in dist/.\n',
    );
  }
}
const { main } = await import(pathToFileURL(entry).href);
await main(process.argv);
