/**
 * `api`: runs the HTTP API (the same as `npm run api`) until SIGINT/SIGTERM, or with
 * `--new-key <account>` makes an API key: its SHA-256 is added to the key file (a running API
 * accepts it within a second) and the key itself is printed once, on stdout.
 */
import { Option, type Command } from 'commander';
import { InvalidInputError } from '../../client/errors.js';
import { loadCliConfig } from '../context.js';
import { jsonOption, port } from '../options.js';
import { printJson } from '../print.js';

/** Adds `api` to `program`. */
export function registerApi(program: Command): void {
  jsonOption(
    program.command('api'),
    'with --new-key, print {account, name, keysFile, key} as JSON; a start-up error as JSON (the request log is unchanged)',
  )
    .description('run the HTTP API (same as `npm run api`), or make an API key with --new-key')
    .option('-c, --config <file>', 'configuration file')
    .option('--host <host>', 'listen address (default: config api.host, 127.0.0.1)')
    .addOption(new Option('--port <port>', 'listen port (default: config api.port, 8080)').argParser(port))
    .option(
      '--new-key <account>',
      'create an API key for <account>: its SHA-256 is added to the key file and the key is printed once',
    )
    .option('--key-name <name>', 'label of the new key (who holds it)')
    .action(async (opts) => {
      const { file } = await loadCliConfig(opts.config);
      const api = await import('../../api/main.js');
      if (opts.newKey) {
        const { AccountSchema } = await import('../../model/schemas.js');
        if (!AccountSchema.safeParse(opts.newKey).success)
          throw new InvalidInputError(`invalid account "${opts.newKey}"`, []);
        const { key, file: keysFile } = api.createApiKey({
          account: opts.newKey,
          name: opts.keyName,
          configFile: file,
        });
        console.error(
          `added the SHA-256 of a new key for account "${opts.newKey}" to ${keysFile}; the key is shown once, store it now (a running API picks it up within a second):`,
        );
        if (opts.json)
          return printJson({ account: opts.newKey, name: opts.keyName ?? null, keysFile, key }, { redact: false });
        console.log(key);
        return;
      }
      await api.runApiMain({ configFile: file, host: opts.host, port: opts.port });
    });
}
