/**
 * How the API reads request bodies: JSON only (anything else: 415), UTF-8 only, parsed strictly
 * (`src/lib/json.ts`: a duplicate key, a prototype-poisoning key or nesting past 64 levels is
 * refused with the reason, never "the last one wins").
 */
import type { FastifyInstance } from 'fastify';
import { parseJsonStrict } from '../lib/json.js';

/** Replaces the app's body parsers with the strict JSON one; an empty body is "no body" (`POST …/cancel` may carry a JSON content type and nothing). */
export function acceptStrictJson(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  // The body must be UTF-8 (RFC 8259 §8.1): another declared charset is a 415 and bytes that are
  // not UTF-8 a 400, never text silently "repaired" with U+FFFD.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, raw, done) => {
    // Every charset parameter (a repeated one included), quoted or not, must name UTF-8.
    const charsets = [...(req.headers['content-type'] ?? '').matchAll(/;\s*charset\s*=\s*("[^"]*"[^;]*|[^;]*)/gi)].map(
      (m) =>
        m[1]!
          .trim()
          .replace(/^"([^"]*)"$/, '$1')
          .toLowerCase(),
    );
    const charset = charsets.find((c) => c !== 'utf-8' && c !== 'utf8');
    if (charset !== undefined) {
      return done(
        Object.assign(new Error(`the body must be UTF-8 JSON; charset=${charset} is not accepted`), {
          statusCode: 415,
          code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
        }),
        undefined,
      );
    }
    let body: string;
    try {
      body = utf8.decode(raw as Buffer);
    } catch {
      return done(Object.assign(new SyntaxError('the body is not valid UTF-8'), { statusCode: 400 }), undefined);
    }
    if (body.trim() === '') return done(null, undefined);
    try {
      done(null, parseJsonStrict(body));
    } catch (e) {
      done(Object.assign(e instanceof SyntaxError ? e : new SyntaxError(String(e)), { statusCode: 400 }), undefined);
    }
  });
}
