/**
 * The secrets scan can fail: a secret planted in each kind of evidence — a store row
 * (kept through `keepStore`), a log line, a recorded CLI and HTTP answer, a workflow history's
 * payload, plain and encrypted — is reported with where it is; credential patterns are found
 * without knowing the value; redaction placeholders and prose are not hits.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EncryptionCodec } from '../../src/codec/codec.js';
import { newKeyEntry, parseKeyring } from '../../src/codec/keys.js';
import { openStore } from '../../src/store/index.js';
import { EVIDENCE_ENV, keepLog, keepStore, recordAnswer, recordSecrets } from '../helpers/evidence.js';
import {
  historyTextDecoded,
  recordedSecrets,
  scanAnswers,
  scanLogs,
  SecretScanner,
  scanStores,
} from '../helpers/secretScan.js';

const SECRET = 'planted-5ecret-0123456789abcdef';
let dir: string;
let previous: string | undefined;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scan-unit-'));
  previous = process.env[EVIDENCE_ENV];
  process.env[EVIDENCE_ENV] = dir;
});
afterEach(() => {
  if (previous === undefined) delete process.env[EVIDENCE_ENV];
  else process.env[EVIDENCE_ENV] = previous;
  fs.rmSync(dir, { recursive: true, force: true });
});

const scanAll = (secrets: string[]) => {
  const s = new SecretScanner(secrets);
  scanStores(s, dir);
  scanLogs(s, dir);
  scanAnswers(s, dir);
  return s.result();
};

describe('secrets scan', () => {
  it('reports a secret planted in a kept store, a log, a CLI answer and an HTTP answer, each where it is', async () => {
    recordSecrets('planted', [SECRET]);
    expect(recordedSecrets(dir)).toEqual([SECRET]);
    const store = await openStore('sqlite::memory:');
    await store.db
      .insertInto('jobs')
      .values({
        id: 'scrape:acme:k',
        account: 'acme',
        idem_key: 'k',
        provider: 'p',
        request_hash: 'h',
        url: 'https://e.x/',
        input: JSON.stringify({ note: SECRET }),
        options: '{}',
        batch_id: null,
        workflow_id: 'scrape:acme:k',
        task_id: null,
        deadline_at: null,
        state: 'pending',
        created_at: 'now',
        updated_at: 'now',
      } as never)
      .execute();
    await keepStore(store, 'unit');
    await store.close();
    keepLog('worker', `{"level":"WARN","message":"retrying with key ${Buffer.from(SECRET).toString('base64')}"}\n`);
    recordAnswer('cli', 'status k', `last error: invalid key ${SECRET}`);
    recordAnswer(
      'http',
      'GET /v1/scrapes/k',
      `200\ncontent-type: application/json\n\n{"final_url":"https://e.x/?x=${encodeURIComponent(SECRET)}"}`,
    );

    const r = scanAll(recordedSecrets(dir));
    expect(r.hits.map((h) => [h.source, h.kind, h.what])).toEqual(
      expect.arrayContaining([
        ['stores', 'secret', 'secret #1 (as given)'],
        ['logs', 'secret', 'secret #1 (base64)'],
        ['answers', 'secret', 'secret #1 (as given)'],
      ]),
    );
    expect(r.hits.find((h) => h.source === 'stores')!.item).toMatch(/^unit-[0-9a-f]+\.db › jobs \(1 rows\)$/);
    expect(r.hits.filter((h) => h.source === 'answers').map((h) => h.item)).toEqual([
      'cli status k',
      'http GET /v1/scrapes/k',
    ]);
    expect(r.hits.every((h) => !h.excerpt.includes(SECRET))).toBe(true); // the report masks what it found
    expect(r.volume.stores.items).toBeGreaterThan(0);
    expect(r.volume.logs).toMatchObject({ items: 1 });
    expect(r.volume.answers).toMatchObject({ items: 2 });
  });

  it('finds credential patterns without knowing the value, and leaves placeholders and prose alone', () => {
    const s = new SecretScanner([]);
    s.scan('logs', 'dirty', 'authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y');
    s.scan('logs', 'dirty', 'GET https://api.example.com/v1?api_key=AbCdEf0123456789&x=1');
    s.scan('logs', 'dirty', 'POST /jobs token=9f8e7d6c5b4a39281706');
    s.scan('logs', 'dirty', '{"k":"sk-live-abcdef0123456789"}');
    s.scan('logs', 'dirty', 'Basic dXNlcjpwYXNzd29yZA==');
    expect(s.result().hits.map((h) => h.what)).toEqual([
      'Bearer/Basic credential',
      'credential parameter',
      'credential parameter',
      'sk- key',
      'Bearer/Basic credential',
    ]);

    const clean = new SecretScanner(['short', SECRET]);
    clean.scan('answers', 'clean', 'www-authenticate: Bearer realm="scrape-orchestrator"');
    clean.scan('answers', 'clean', 'send Authorization: Bearer <api key>; Basic authentication is not supported');
    clean.scan(
      'answers',
      'clean',
      'final_url https://e.x/?api_key=%5BREDACTED%5D&token=[REDACTED]&token=eth&key=shoes',
    );
    clean.scan('answers', 'clean', 'task-skyline sk-1 desk_lamp');
    expect(clean.result().hits).toEqual([]);
  });

  it('decodes history payloads, decrypting encrypted ones; without the key the history cannot be proven clean', async () => {
    const keys = newKeyEntry('unit');
    const codec = new EncryptionCodec(parseKeyring(keys));
    const plain = {
      metadata: { encoding: Buffer.from('json/plain') },
      data: Buffer.from(JSON.stringify({ url: `https://e.x/?q=${SECRET}` })),
    };
    const [encrypted] = await codec.encode([plain]);
    const history = {
      events: [{ eventId: 1, workflowExecutionStartedEventAttributes: { input: { payloads: [encrypted] } } }],
    };
    let decrypted = 0;
    const text = await historyTextDecoded(history, codec, () => decrypted++);
    expect(decrypted).toBe(1);
    const s = new SecretScanner([SECRET]);
    s.scan('histories', 'wf', text);
    expect(s.result().hits).toHaveLength(1);
    await expect(historyTextDecoded(history, undefined, () => undefined)).rejects.toThrow(
      /encrypted payload and no codec keys/,
    );
    // Without the codec the ciphertext hides the secret: that is why an undecryptable history fails the scan.
    expect(JSON.stringify(history)).not.toContain(SECRET);
  });

  it('a store that could not be kept is unscanned, which fails the scan', () => {
    fs.mkdirSync(path.join(dir, 'stores'));
    fs.writeFileSync(
      path.join(dir, 'stores', 'x-1.error'),
      'store x (postgres) could not be kept: connection refused\n',
    );
    const r = scanAll([]);
    expect(r.unscanned).toEqual(['store x (postgres) could not be kept: connection refused']);
  });
});
