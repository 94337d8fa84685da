/**
 * The `codec` section of the configuration (payload encryption and the codec server) and the data
 * converter it gives the Temporal client and worker.
 */
import { fileURLToPath } from 'node:url';
import fs from 'node:fs';
import type { DataConverter } from '@temporalio/common';
import { z } from 'zod';
import { EncryptionCodec } from './codec.js';
import { keyringFromEnv } from './keys.js';

const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name');

/**
 * Payload encryption (off by default; on in the cluster topology). Keys and the codec server's
 * token come from environment variables named here, never from this file.
 */
export const CodecConfigSchema = z
  .object({
    /** Encrypt every payload (client and worker must agree). Env override: `SCRAPE_CODEC=on|off`. */
    enabled: z.boolean().default(false),
    /** Variable holding the keys (`<id>:<base64>,…`, first = current; see `src/codec/keys.ts`). */
    keysEnv: EnvName.default('SCRAPE_CODEC_KEYS'),
    /** Variable that may name the current key ID instead of the first listed. */
    currentKeyEnv: EnvName.default('SCRAPE_CODEC_CURRENT_KEY'),
    /** The codec server the Web UI calls (`npm run codec-server`). */
    server: z
      .object({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.number().int().min(0).max(65_535).default(8089),
        /** Web UI origins allowed by CORS, e.g. `http://127.0.0.1:8088` (exact matches). */
        corsOrigins: z.array(z.url()).default([]),
        /** Variable holding the operators' token (`Authorization: Bearer …`, or the login page's session cookie). */
        tokenEnv: EnvName.default('SCRAPE_CODEC_TOKEN'),
        /** Mark the session cookie `Secure` (serve the codec server over https in production). */
        secureCookie: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
  })
  .strict();
/** The parsed `codec` section. */
export type CodecConfig = z.infer<typeof CodecConfigSchema>;

/**
 * The data converter for `codec`: undefined when encryption is off (the SDK default), else the
 * {@link EncryptionCodec} plus a failure converter (`failureConverter.ts`) that moves error messages
 * and stack traces into an (encrypted) payload; the workflow bundle must include the same module.
 *
 * @throws Error when encryption is on and the keys are missing or invalid.
 */
export function dataConverterFor(codec: CodecConfig, env: NodeJS.ProcessEnv = process.env): DataConverter | undefined {
  if (!codec.enabled) return undefined;
  return {
    payloadCodecs: [new EncryptionCodec(keyringFromEnv(env, codec.keysEnv, codec.currentKeyEnv))],
    failureConverterPath: failureConverterPath(),
  };
}

/** Absolute path of the failure converter module (TypeScript source under tsx, JS under dist/). */
export function failureConverterPath(): string {
  const ts = fileURLToPath(new URL('./failureConverter.ts', import.meta.url));
  return fs.existsSync(ts) ? ts : fileURLToPath(new URL('./failureConverter.js', import.meta.url));
}
