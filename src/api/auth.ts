/**
 * API keys of the HTTP API: each key maps to one account; only SHA-256 hashes are stored.
 *
 * Key file (`api.keysFile`, or the same JSON in the environment variable `api.keysEnv`, default
 * `SCRAPE_API_KEYS`; entries of both are used):
 *
 * ```json
 * { "keys": [ { "account": "acme", "sha256": "<64 hex chars>", "name": "billing-service" } ] }
 * ```
 *
 * `sha256` is the lowercase hex SHA-256 of the whole key string. `npm run cli -- api --new-key
 * <account>` makes a key (`sk_scrape_` + 43 base64url characters = 256 random bits), appends its
 * hash to the key file and prints the key once. Why SHA-256 and not scrypt: the keys are
 * 256-bit random tokens, not passwords, so a slow hash adds no protection against guessing and
 * would cost every request (and invite CPU exhaustion); a leaked key file still reveals no key.
 * Presented keys are hashed and compared with `crypto.timingSafeEqual` against every entry,
 * without stopping at the first match.
 *
 * A running API reloads the key file when it changes ({@link watchApiKeys}, on by default) and on
 * `SIGHUP`: a key made with `--new-key` works at once, a key removed from the file stops working.
 * A file that cannot be read or parsed at that moment keeps the keys in force (and says why).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { AccountSchema } from '../model/schemas.js';

/** One configured key: the account it acts as, the key's hash, an optional label. */
const ApiKeyEntrySchema = z
  .object({
    account: AccountSchema,
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'sha256 must be 64 lowercase hex characters (the SHA-256 of the key, not the key)'),
    /** Who holds the key (shown in logs instead of the key). */
    name: z.string().min(1).max(100).optional(),
  })
  .strict();
/** A parsed key file entry (see {@link ApiKeyEntrySchema}). */
export type ApiKeyEntry = z.infer<typeof ApiKeyEntrySchema>;

/** The key file / `SCRAPE_API_KEYS` JSON. */
const ApiKeysFileSchema = z.object({ keys: z.array(ApiKeyEntrySchema) }).strict();
/** A parsed key file (see {@link ApiKeysFileSchema}). */
export type ApiKeysFile = z.infer<typeof ApiKeysFileSchema>;

/** Lowercase hex SHA-256 of a key (what the key file stores). */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new random API key: `sk_scrape_` + 32 random bytes in base64url (43 characters). */
export function generateApiKey(): string {
  return `sk_scrape_${randomBytes(32).toString('base64url')}`;
}

function parseKeys(label: string, text: string): ApiKeyEntry[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    // The parser's own message quotes an excerpt of the text, which may be a key pasted in by
    // mistake: only where the text stops being JSON is said.
    const where = /at position \d+(?: \(line \d+ column \d+\))?/.exec((e as Error).message)?.[0];
    throw new Error(
      `${label} is not valid JSON${where ? ` ${where}` : ''}; its text is not shown, as it may hold a key (expected {"keys": [{"account", "sha256", "name"?}]})`,
    );
  }
  const parsed = ApiKeysFileSchema.safeParse(json);
  if (!parsed.success)
    throw new Error(
      `${label} is not a valid key file (${'{"keys": [{"account", "sha256", "name"?}]}'}):\n${z.prettifyError(parsed.error)}`,
    );
  return parsed.data.keys;
}

/**
 * The configured keys: the entries of `keysFile` (when set) plus those of `env[keysEnv]` (when
 * set). Throws a readable error for a missing or invalid file or variable (never echoing a key).
 */
export function loadApiKeys(
  opts: { keysFile?: string; keysEnv: string },
  env: NodeJS.ProcessEnv = process.env,
): ApiKeyEntry[] {
  const out: ApiKeyEntry[] = [];
  if (opts.keysFile) {
    let text: string;
    try {
      text = fs.readFileSync(opts.keysFile, 'utf8');
    } catch (e) {
      throw new Error(
        `cannot read the API key file ${opts.keysFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    out.push(...parseKeys(`API key file ${opts.keysFile}`, text));
  }
  const fromEnv = env[opts.keysEnv];
  if (fromEnv) out.push(...parseKeys(`environment variable ${opts.keysEnv}`, fromEnv));
  return out;
}

/**
 * Appends a key's hash to the key file (created with mode 0600 when missing; other entries are
 * kept). Throws when the existing file is invalid.
 */
export function addKeyToFile(file: string, entry: ApiKeyEntry): void {
  const current = fs.existsSync(file) ? parseKeys(`API key file ${file}`, fs.readFileSync(file, 'utf8')) : [];
  const next: ApiKeysFile = { keys: [...current, ApiKeyEntrySchema.parse(entry)] };
  fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
}

/** Who a valid key acts as. */
export interface Caller {
  account: string;
  /** The key's label, when it has one. */
  keyName?: string;
}

/** The set of valid keys; authenticates `Authorization` header values. */
export class ApiKeyring {
  private entries: { digest: Buffer; caller: Caller }[] = [];

  constructor(entries: readonly ApiKeyEntry[]) {
    this.replace(entries);
  }

  /** Puts `entries` in force instead of the current keys (one assignment: a request sees the old set or the new one). */
  replace(entries: readonly ApiKeyEntry[]): void {
    this.entries = entries.map((e) => ({
      digest: Buffer.from(e.sha256, 'hex'),
      caller: e.name ? { account: e.account, keyName: e.name } : { account: e.account },
    }));
  }

  /** Number of configured keys. */
  get size(): number {
    return this.entries.length;
  }

  /**
   * The caller of `Authorization: Bearer <key>`, or undefined for a missing, malformed or unknown
   * key. The presented key is hashed and compared with every entry in constant time.
   */
  authenticate(authorization: string | undefined): Caller | undefined {
    if (typeof authorization !== 'string') return undefined;
    const m = /^Bearer[ ]+([\x21-\x7e]{1,512})[ ]*$/i.exec(authorization);
    if (!m) return undefined;
    const digest = createHash('sha256').update(m[1]!, 'utf8').digest();
    let found: Caller | undefined;
    for (const e of this.entries) {
      if (timingSafeEqual(digest, e.digest) && !found) found = e.caller;
    }
    return found;
  }
}

/** A running key-file watch (see {@link watchApiKeys}). */
export interface ApiKeyWatch {
  /** Reads the keys again now (what `SIGHUP` does); returns the number in force, or the error that kept the old ones. */
  reload(): { ok: true; keys: number } | { ok: false; error: string };
  /** Stops watching. */
  close(): void;
}

/**
 * Keeps `keyring` equal to what {@link loadApiKeys} reads from `keysFile` (when given) and
 * `env[keysEnv]`: reloads when the file is written, created, replaced or removed (`fs.watch` on its
 * directory, events merged over `debounceMs`, default 100 ms), and on {@link ApiKeyWatch.reload}.
 * With `watch: false` only `reload()` reloads (for file systems where change events do not
 * arrive, e.g. network mounts: send `SIGHUP`). A file that cannot be read or parsed keeps the
 * keys in force; `onReload` hears every outcome.
 */
export function watchApiKeys(opts: {
  keyring: ApiKeyring;
  keysFile?: string;
  keysEnv: string;
  env?: NodeJS.ProcessEnv;
  watch?: boolean;
  debounceMs?: number;
  onReload?: (outcome: { ok: true; keys: number } | { ok: false; error: string }) => void;
}): ApiKeyWatch {
  const env = opts.env ?? process.env;
  const reload = () => {
    let outcome: { ok: true; keys: number } | { ok: false; error: string };
    try {
      const keys = loadApiKeys(
        {
          keysFile: opts.keysFile && (fs.existsSync(opts.keysFile) ? opts.keysFile : undefined),
          keysEnv: opts.keysEnv,
        },
        env,
      );
      opts.keyring.replace(keys);
      outcome = { ok: true, keys: keys.length };
    } catch (e) {
      outcome = { ok: false, error: (e as Error).message };
    }
    opts.onReload?.(outcome);
    return outcome;
  };
  let watcher: fs.FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (opts.keysFile && opts.watch !== false) {
    const dir = path.dirname(path.resolve(opts.keysFile));
    const base = path.basename(opts.keysFile);
    fs.mkdirSync(dir, { recursive: true });
    watcher = fs.watch(dir, { persistent: false }, (_event, name) => {
      if (name !== null && name !== base) return;
      clearTimeout(timer);
      timer = setTimeout(reload, opts.debounceMs ?? 100);
      timer.unref();
    });
    watcher.on('error', (e) => opts.onReload?.({ ok: false, error: `watching ${dir}: ${e.message}` }));
  }
  return {
    reload,
    close() {
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
