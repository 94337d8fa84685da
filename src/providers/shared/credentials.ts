/**
 * Provider credentials: how they are configured (a literal key or the name of an environment
 * variable, by default and per account), how the worker resolves the one of a (provider, account)
 * pair at call time, and every form in which a credential value could leak into a record (the
 * value itself, the password of a `user:password` pair, its Base64 Basic form).
 *
 * Credentials are worker configuration, never workflow input (docs/design.md, “Rules”: no secrets in history, logs or errors). Their string is
 * interpreted by the adapter: a bearer token, a query-string token, or `user:password` for Basic
 * authentication (see `CredentialPlacement` in `http.ts`).
 */
import { z } from 'zod';
import { ProviderError } from './errors.js';

/** An API key given literally (config files are worker-side secrets) or by environment variable name. */
const CredentialSchema = z.union([
  z.strictObject({
    apiKey: z
      .string()
      .trim()
      .min(1, 'apiKey is blank')
      // No control character (a line break inside a key cannot be sent in a header and would be split in records).
      // eslint-disable-next-line no-control-regex -- finding control characters is the point
      .regex(/^[^\x00-\x1f\x7f]*$/, 'apiKey contains a control character (a line break or tab inside the key?)'),
  }),
  z.strictObject({ apiKeyEnv: z.string().trim().min(1, 'apiKeyEnv is blank') }),
]);
/** One configured credential (see {@link CredentialSchema}). */
export type Credential = z.infer<typeof CredentialSchema>;

/** Credentials of one provider: a default and per-account overrides (our account → provider key). */
export const CredentialsSchema = z.strictObject({
  default: CredentialSchema.optional(),
  accounts: z.record(z.string(), CredentialSchema).default({}),
});
/** The parsed `credentials` of a provider entry. */
export type Credentials = z.infer<typeof CredentialsSchema>;

/** An entry's credentials, as far as the functions below read them: absent where the entry's calls send none (see `needsCredential` in `../kinds.ts`). */
type WithCredentials = { credentials?: Credentials };

const NONE: Credentials = { accounts: {} };

/**
 * The credential for (provider, account): the account's own, else the provider default. Returns
 * the value and a label naming the provider account (`<provider>/<account|default>`, used to key
 * the shared limiter; never the value itself). Throws an `Error` when none is configured or the
 * named environment variable is empty.
 */
export function resolveCredential(
  entry: WithCredentials,
  providerName: string,
  account: string,
  env: NodeJS.ProcessEnv = process.env,
): { apiKey: string; label: string } {
  const creds = entry.credentials ?? NONE;
  const own = creds.accounts[account];
  const cred = own ?? creds.default;
  if (!cred)
    throw new Error(
      `no credentials for provider "${providerName}" and account "${account}" in the worker configuration`,
    );
  const label = `${providerName}/${own ? account : 'default'}`;
  // Trimmed: a key read from a mounted secret file often ends in a newline, which HTTP drops
  // anyway; the redactor must know the value the provider sees (and may echo).
  if ('apiKey' in cred) return { apiKey: cred.apiKey.trim(), label };
  const raw = env[cred.apiKeyEnv];
  const v = raw?.trim();
  if (!v)
    throw new Error(
      `environment variable ${cred.apiKeyEnv} (credentials of ${label}) is ${raw === undefined || raw === '' ? 'not set' : 'blank'}`,
    );
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  if (/[\x00-\x1f\x7f]/.test(v))
    throw new Error(
      `environment variable ${cred.apiKeyEnv} (credentials of ${label}) contains a control character (a line break or tab inside the key?)`,
    );
  return { apiKey: v, label };
}

/**
 * Whether `entry` names a credential for `account` (its own, or the entry's default), whatever its
 * value: what a client can check from the configuration alone (the value may live in a worker's
 * environment).
 */
export function hasCredentialFor(entry: WithCredentials, account: string): boolean {
  const creds = entry.credentials ?? NONE;
  return creds.accounts[account] !== undefined || creds.default !== undefined;
}

/**
 * The credentials of `entry` (provider `providerName`) that cannot be used in environment `env`:
 * a named environment variable that is unset or blank, and an entry with no credential at all.
 * Each problem names the account (`default` for the entry's default), what is wrong and what to
 * set. A worker warns of each at start; a job that meets one waits, then fails with it.
 */
export function credentialProblems(
  entry: WithCredentials,
  providerName: string,
  env: NodeJS.ProcessEnv = process.env,
): { account: string; problem: string }[] {
  const out: { account: string; problem: string }[] = [];
  const { default: def, accounts } = entry.credentials ?? NONE;
  if (!def && Object.keys(accounts).length === 0)
    out.push({
      account: 'default',
      problem: `provider "${providerName}" has no credential: add credentials.default (or credentials.accounts.<account>) to its entry`,
    });
  for (const [account, cred] of [['default', def] as const, ...Object.entries(accounts)]) {
    if (!cred || !('apiKeyEnv' in cred) || env[cred.apiKeyEnv]?.trim()) continue;
    out.push({
      account,
      problem: `provider "${providerName}", ${account === 'default' ? 'default credential' : `account "${account}"`}: environment variable ${cred.apiKeyEnv} is not set on this worker; its jobs will wait for it and then fail`,
    });
  }
  return out;
}

/**
 * Every credential value an entry configures that can be read now (literal keys, and the values of
 * the named environment variables that are set), each expanded by {@link credentialSecrets}.
 */
export function configuredCredentialValues(entry: WithCredentials, env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  const creds = entry.credentials ?? NONE;
  for (const c of [creds.default, ...Object.values(creds.accounts)]) {
    if (!c) continue;
    const value = 'apiKey' in c ? c.apiKey : env[c.apiKeyEnv];
    if (value) out.push(...credentialSecrets(value));
  }
  return out;
}

/**
 * The forms of one credential value that must be scrubbed from records: the value (trimmed, as
 * it is sent, and as configured when that differs); for a
 * `user:password` pair also the password alone and the Base64 of the pair (what a Basic
 * `Authorization` header carries).
 */
export function credentialSecrets(raw: string): string[] {
  const value = raw.trim();
  const out = value === raw ? [value] : [value, raw];
  const colon = value.indexOf(':');
  if (colon > 0 && colon < value.length - 1) {
    out.push(value.slice(colon + 1), Buffer.from(value, 'utf8').toString('base64'));
  }
  return out;
}

/**
 * Splits a Basic credential `user:password` (RFC 7617: the user ID contains no colon). Throws a
 * permanent {@link ProviderError} `BAD_CREDENTIALS` (naming the provider, never the value) when
 * there is no colon.
 */
export function splitBasicCredential(value: string, providerName: string): { user: string; password: string } {
  const colon = value.indexOf(':');
  if (colon <= 0) {
    throw new ProviderError(
      'permanent',
      `the credential of provider ${providerName} must be "user:password" for Basic authentication`,
      {
        code: 'BAD_CREDENTIALS',
      },
    );
  }
  return { user: value.slice(0, colon), password: value.slice(colon + 1) };
}
