/**
 * The `scrape` command line's entry: `bin/scrape.js` runs its build (`dist/cli.js`), and
 * `npm run dev:cli` / `node --import tsx src/cli.ts <command>` run it from source. The program and
 * its commands are in `cli/main.ts` and `cli/commands/`.
 */
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { main } from './cli/main.js';

export { buildCli, main } from './cli/main.js';

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) void main();
