/**
 * The material from the command line (`node --import tsx test/material/main.ts …`):
 *
 * - `obtain <name>…`: obtains each material as the tests do and prints `<name>: <folder>`; for one
 *   that cannot be obtained, the error (what is missing, the ways to provide it) and exit status 1.
 *   CI runs it before the tests so that its log says where the material came from, and a cold
 *   cache is filled once instead of by several test files at a time.
 * - `write-manifest <name> <folder>`: writes `manifests/<name>.sha256` from a copy (for pinning a
 *   new commit: check the copy first, the manifest is what every later copy is held to).
 */
import fs from 'node:fs';
import path from 'node:path';
import { buildManifest } from './manifest.js';
import { MATERIAL_NAMES, MATERIALS, manifestPath, type MaterialName } from './materials.js';
import { MaterialMissingError, obtainMaterial } from './index.js';

const isName = (s: string | undefined): s is MaterialName => MATERIAL_NAMES.includes(s as MaterialName);
const usage = `usage: main.ts obtain <${MATERIAL_NAMES.join('|')}>… | write-manifest <name> <folder>`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'obtain' && rest.length > 0 && rest.every(isName)) {
    let status = 0;
    for (const name of rest) {
      try {
        console.log(`${name}: ${await obtainMaterial(name)}`);
      } catch (err) {
        if (!(err instanceof MaterialMissingError)) throw err;
        console.error(err.message);
        status = 1;
      }
    }
    return status;
  }
  const [name, dir] = rest;
  if (cmd === 'write-manifest' && isName(name) && dir) {
    const text = await buildManifest(MATERIALS[name], path.resolve(dir));
    fs.writeFileSync(manifestPath(name), text);
    console.log(`${manifestPath(name)}: ${text.split('\n').length - 1} files`);
    return 0;
  }
  console.error(usage);
  return 2;
}

process.exitCode = await main(process.argv.slice(2));
