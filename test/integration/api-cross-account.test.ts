/**
 * Cross-account probes: 1,000 requests generated with fast-check (fixed seed) between
 * three accounts, against the HTTP API on a real stack. Each account owns the same three jobs by
 * key — one completed, one that never finishes, one with a key of its own — so that the same key
 * exists under every account. A probe is a caller (a valid key of one account, in either spelling
 * of `Bearer`, or an invalid key: none, truncated, extended, random, a Basic credential) × an
 * endpoint (status, result, documents, cancel, the list with state/batch filters and another
 * account's cursor, the signed and the per-job-token webhook routes) × a target (a job of any
 * account, or a missing one) × an ID form (raw, URL-encoded, double-encoded, with the caller's or
 * another account's prefix, upper-case prefix, the key alone).
 *
 * What must hold, for every probe:
 * - no answer (status line, headers, body) carries anything of another account's job that the
 *   request did not already contain: its job ID, task ID or URL;
 * - a valid caller asking for a job that is not its own gets a 404 byte-identical (status,
 *   content type and length, body) to the 404 for a job that does not exist at all;
 * - an invalid key gets the same 401 whatever it asks for; a webhook delivery with a wrong token
 *   gets the same 401 whether the job it names exists or not;
 * - afterwards, no job changed but those their own account cancelled.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackToken } from '../../src/providers/shared/webhook.js';
import { startPageServer, type PageServer } from '../helpers/pages.js';
import { API_KEYS, startApiStack, type ApiStack } from '../helpers/api.js';
import { recordAnswer } from '../helpers/evidence.js';
import { FAST_POLICY, waitForState } from '../helpers/stack.js';

const ACCOUNTS = ['acme', 'globex', 'lister'] as const;
type Account = (typeof ACCOUNTS)[number];
const PROBES = 1_000;
const SEED = 1_300_013;

interface Job {
  account: Account;
  kind: 'done' | 'wait' | 'only';
  jobId: string;
  key: string;
  taskId: string;
  url: string;
}

let pages: PageServer;
let api: ApiStack;
const jobs: Job[] = [];
const cursors = new Map<Account, string>();

beforeAll(async () => {
  pages = await startPageServer();
  api = await startApiStack({
    webhooks: true,
    profile: { concurrency: 100 },
    api: {
      cancelWaitMs: 0,
      rateLimit: {
        default: { max: 1_000_000, timeWindowMs: 60_000 },
        accounts: {},
        unauthenticated: { max: 1_000_000, timeWindowMs: 60_000 },
        webhooks: { max: 1_000_000, timeWindowMs: 60_000 },
      },
    },
  });
  // Unsigned deliveries, so that the per-job token route is live (the worker reads the same entry).
  (api.stack.config.providers.reference as { webhookSignature: boolean }).webhookSignature = false;
  api.stack.sim.faults.add({ endpoint: 'submit', urlContains: 'never-ends', action: 'never_finish' });
  // The never-finishing job last: an account of the reference provider runs one job at a time by default.
  for (const kind of ['done', 'only', 'wait'] as const) {
    for (const account of ACCOUNTS) {
      const key = kind === 'only' ? `only-${account}-${randomBytes(3).toString('hex')}` : `probe-${kind}`;
      const url = `${pages.pageUrl(kind === 'wait' ? '002' : kind === 'done' ? '001' : 'aclu')}?probe=${kind === 'wait' ? 'never-ends' : kind}-${account}`;
      const r = await api.call(account, 'POST', '/v1/scrapes', {
        json: { url, batch_id: `batch-${account}`, policy: { ...FAST_POLICY, deadlineMs: 3_600_000 } },
        headers: { 'idempotency-key': key },
      });
      expect(r.status).toBe(202);
      jobs.push({ account, kind, jobId: ((await r.json()) as { job_id: string }).job_id, key, taskId: '', url });
    }
    for (const j of jobs.filter((x) => x.kind === kind))
      j.taskId = (
        await waitForState(api.stack.store, j.jobId, kind === 'wait' ? ['pending'] : ['completed'], 90_000)
      ).task_id!;
  }
  for (const account of ACCOUNTS) {
    const page = (await (await api.call(account, 'GET', '/v1/scrapes?limit=1')).json()) as { next_cursor: string };
    cursors.set(account, page.next_cursor);
  }
}, 240_000);
afterAll(async () => {
  await api?.stop();
  await pages?.close();
});

type KeyKind = 'valid' | 'valid-lowercase-scheme' | 'none' | 'truncated' | 'extended' | 'random' | 'basic';
type Endpoint = 'status' | 'result' | 'documents' | 'cancel' | 'list' | 'webhook-plain' | 'webhook-token';
type IdForm = 'raw' | 'encoded' | 'double-encoded' | 'caller-prefix' | 'upper-prefix' | 'key-only';
interface Probe {
  caller: Account;
  keyKind: KeyKind;
  endpoint: Endpoint;
  target: number; // index into jobs, or -1 for a job that does not exist
  idForm: IdForm;
  listState: string | null;
  listBatchOf: Account | null;
  listCursorOf: Account | null;
  docs: { offset: number; limit: number };
  cancelBody: 'none' | 'empty' | 'reason';
  wrongToken: 'random' | 'other-job' | 'none';
}

const probeArb: fc.Arbitrary<Probe> = fc.record({
  caller: fc.constantFrom(...ACCOUNTS),
  keyKind: fc.oneof(
    { weight: 6, arbitrary: fc.constant<KeyKind>('valid') },
    {
      weight: 1,
      arbitrary: fc.constantFrom<KeyKind>('valid-lowercase-scheme', 'none', 'truncated', 'extended', 'random', 'basic'),
    },
  ),
  endpoint: fc.constantFrom<Endpoint>(
    'status',
    'result',
    'documents',
    'cancel',
    'list',
    'webhook-plain',
    'webhook-token',
  ),
  target: fc.integer({ min: -1, max: ACCOUNTS.length * 3 - 1 }),
  idForm: fc.constantFrom<IdForm>('raw', 'encoded', 'double-encoded', 'caller-prefix', 'upper-prefix', 'key-only'),
  listState: fc.constantFrom(null, 'pending', 'completed', 'pending,completed', 'cancelled'),
  listBatchOf: fc.constantFrom(null, ...ACCOUNTS),
  listCursorOf: fc.constantFrom(null, ...ACCOUNTS),
  docs: fc.record({ offset: fc.integer({ min: 0, max: 5 }), limit: fc.integer({ min: 1, max: 1000 }) }),
  cancelBody: fc.constantFrom('none', 'empty', 'reason'),
  wrongToken: fc.constantFrom('random', 'other-job', 'none'),
});

/** The ID a probe puts in the path (before encoding) and whether it names the caller's own job. */
function idOf(p: Probe): { id: string; own: boolean } {
  const j = p.target >= 0 ? jobs[p.target]! : undefined;
  const key = j?.key ?? `missing-${p.target}-${p.caller}`;
  const account = j?.account ?? p.caller;
  const full = `scrape:${account}:${key}`;
  switch (p.idForm) {
    case 'caller-prefix': {
      const id = `scrape:${p.caller}:${key}`;
      return { id, own: jobs.some((x) => x.jobId === id && x.account === p.caller) };
    }
    case 'upper-prefix':
      return { id: `SCRAPE:${account}:${key}`, own: false };
    case 'key-only':
      return { id: key, own: false };
    case 'double-encoded':
      return { id: encodeURIComponent(full), own: false }; // encoded once more below: the server decodes once
    default:
      return { id: full, own: j !== undefined && j.account === p.caller };
  }
}

function authHeader(p: Probe): Record<string, string> {
  const key = API_KEYS[p.caller];
  switch (p.keyKind) {
    case 'valid':
      return { authorization: `Bearer ${key}` };
    case 'valid-lowercase-scheme':
      return { authorization: `bearer ${key}` };
    case 'none':
      return {};
    case 'truncated':
      return { authorization: `Bearer ${key.slice(0, -1)}` };
    case 'extended':
      return { authorization: `Bearer ${key}x` };
    case 'random':
      return { authorization: `Bearer sk_scrape_${randomBytes(32).toString('base64url')}` };
    case 'basic':
      return { authorization: `Basic ${Buffer.from(`${p.caller}:${key}`).toString('base64')}` };
  }
}

interface Request {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

function requestOf(p: Probe): Request {
  const headers = authHeader(p);
  const { id } = idOf(p);
  const seg = p.idForm === 'raw' ? id : encodeURIComponent(id);
  const base = `/v1/scrapes/${seg}`;
  switch (p.endpoint) {
    case 'status':
      return { method: 'GET', path: base, headers };
    case 'result':
      return { method: 'GET', path: `${base}/result`, headers };
    case 'documents':
      return { method: 'GET', path: `${base}/documents?offset=${p.docs.offset}&limit=${p.docs.limit}`, headers };
    case 'cancel':
      return p.cancelBody === 'none'
        ? { method: 'POST', path: `${base}/cancel`, headers }
        : {
            method: 'POST',
            path: `${base}/cancel`,
            headers: { ...headers, 'content-type': 'application/json' },
            body: p.cancelBody === 'empty' ? '{}' : JSON.stringify({ reason: 'probe' }),
          };
    case 'list': {
      const q = new URLSearchParams();
      if (p.listState) q.set('state', p.listState);
      if (p.listBatchOf) q.set('batch_id', `batch-${p.listBatchOf}`);
      if (p.listCursorOf) q.set('cursor', cursors.get(p.listCursorOf)!);
      q.set('limit', String(1 + (p.docs.limit % 10)));
      return { method: 'GET', path: `/v1/scrapes?${q}`, headers };
    }
    case 'webhook-plain':
    case 'webhook-token': {
      const j = p.target >= 0 ? jobs[p.target]! : undefined;
      const event = {
        event_id: `evt_probe_${randomBytes(6).toString('hex')}`,
        type: 'job.completed',
        job_id: j?.taskId ?? `job_missing_${p.target}`,
        status: 'completed',
      };
      const other = jobs[(Math.max(p.target, 0) + 1) % jobs.length]!; // never the named job's own token
      const token =
        p.wrongToken === 'other-job'
          ? callbackToken(api.webhookSecret!, 'reference', other.jobId)
          : randomBytes(32).toString('hex');
      const path =
        p.endpoint === 'webhook-plain' || p.wrongToken === 'none'
          ? '/v1/webhooks/reference'
          : `/v1/webhooks/reference/${token}`;
      return { method: 'POST', path, headers: { 'content-type': 'application/json' }, body: JSON.stringify(event) };
    }
  }
}

/** What decides whether two answers are the same: status, the headers that carry meaning, the body (`instance`, a request ID, aside). */
async function fingerprintOf(
  res: Response,
): Promise<{ status: number; headers: Record<string, string>; body: string; text: string }> {
  const body = await res.text();
  const headers: Record<string, string> = {};
  for (const [k, v] of res.headers) if (!/^(date|connection|keep-alive|x-ratelimit-.*)$/i.test(k)) headers[k] = v;
  const normal = body.replace(/"instance":"[0-9a-f-]{36}"/, '"instance":"…"');
  return {
    status: res.status,
    headers,
    body: normal,
    text: `${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${body}`,
  };
}

async function send(r: Request): Promise<Response> {
  return fetch(`${api.url}${r.path}`, { method: r.method, headers: r.headers, body: r.body });
}

describe('cross-account probes', () => {
  it(`${PROBES} generated probes reveal no other account's job; a foreign job's 404 is byte-identical to a missing one's`, async () => {
    const probes = fc.sample(probeArb, { seed: SEED, numRuns: PROBES });
    const before = new Map(
      await Promise.all(jobs.map(async (j) => [j.jobId, (await api.stack.store.jobs.get(j.jobId))!.state] as const)),
    );
    const cancelledByOwner = new Set<string>();
    const leaks: string[] = [];
    const mismatches: string[] = [];
    const counts: Record<string, number> = {};
    const reference = new Map<string, Awaited<ReturnType<typeof fingerprintOf>>>();
    const count = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);

    for (const p of probes) {
      const req = requestOf(p);
      const res = await fingerprintOf(await send(req));
      recordAnswer('http', `${req.method} ${req.path.slice(0, 120)}`, res.text); // the secrets scan reads them too
      count(
        `${p.endpoint}/${p.keyKind === 'valid' || p.keyKind === 'valid-lowercase-scheme' ? 'valid' : 'invalid'}-key/${p.endpoint.startsWith('webhook') ? p.wrongToken : p.idForm}`,
      );
      const validKey = p.keyKind === 'valid' || p.keyKind === 'valid-lowercase-scheme';
      const requestText = `${req.path}\n${decodeURIComponent(decodeURIComponent(req.path))}\n${req.body ?? ''}`;
      // 1. Nothing of another account's job that the request did not carry.
      for (const j of jobs) {
        if (validKey && j.account === p.caller && !p.endpoint.startsWith('webhook')) continue;
        for (const marker of [j.jobId, j.taskId, j.url, new URL(j.url).search]) {
          if (!requestText.includes(marker) && res.text.includes(marker))
            leaks.push(`${req.method} ${req.path} as ${p.caller}/${p.keyKind}: ${res.status} carries ${marker}`);
        }
      }
      // 2. The answer a missing target gets, asked the same way (computed once per shape).
      let shape: string;
      let twin: Request;
      if (p.endpoint.startsWith('webhook')) {
        shape = `${p.endpoint}:${p.wrongToken}`;
        twin = requestOf({ ...p, target: -1 });
      } else if (!validKey) {
        shape = `${p.endpoint}:invalid:${p.cancelBody}`;
        twin = {
          ...requestOf({ ...p, target: -1, idForm: 'encoded' }),
          headers: {
            ...(p.cancelBody !== 'none' && p.endpoint === 'cancel' ? { 'content-type': 'application/json' } : {}),
            authorization: 'Bearer sk_scrape_not_a_key',
          },
        };
      } else if (p.endpoint === 'list') {
        const jobsSeen = (JSON.parse(res.body) as { jobs: { job_id: string }[] }).jobs.map((x) => x.job_id);
        if (res.status !== 200 || jobsSeen.some((id) => !id.startsWith(`scrape:${p.caller}:`)))
          mismatches.push(`list as ${p.caller}: ${res.status} ${jobsSeen.join(',')}`);
        continue;
      } else if (idOf(p).own) {
        if (p.endpoint === 'cancel') cancelledByOwner.add(jobs[p.target]!.jobId);
        if (res.status === 404) mismatches.push(`own job ${req.path} as ${p.caller}: 404`);
        continue;
      } else {
        shape = `${p.endpoint}:valid:${p.caller}:${p.cancelBody}`;
        twin = requestOf({ ...p, target: -1, idForm: 'encoded' });
      }
      if (!reference.has(shape)) reference.set(shape, await fingerprintOf(await send(twin)));
      const ref = reference.get(shape)!;
      const same =
        res.status === ref.status &&
        res.body === ref.body &&
        JSON.stringify(res.headers) === JSON.stringify(ref.headers);
      if (!same)
        mismatches.push(
          `${req.method} ${req.path} as ${p.caller}/${p.keyKind}: ${res.status} ${JSON.stringify(res.headers)} ${res.body.slice(0, 200)} ≠ missing: ${ref.status} ${JSON.stringify(ref.headers)} ${ref.body.slice(0, 200)}`,
        );
      if (validKey && !p.endpoint.startsWith('webhook') && res.status !== 404)
        mismatches.push(`${req.method} ${req.path} as ${p.caller}: ${res.status}, not 404`);
    }
    console.log(
      `cross-account probes: ${probes.length} (seed ${SEED}); reference answers compared: ${reference.size} shapes; by endpoint/key/form: ${JSON.stringify(counts)}`,
    );
    expect(leaks).toEqual([]);
    expect(mismatches).toEqual([]);

    // 3. Nothing changed but what the owners cancelled themselves.
    for (const j of jobs) {
      const state = (await api.stack.store.jobs.get(j.jobId))!.state;
      if (!cancelledByOwner.has(j.jobId)) expect(`${j.jobId} ${state}`).toBe(`${j.jobId} ${before.get(j.jobId)}`);
    }
    expect(Object.keys(counts).length).toBeGreaterThan(50);
  }, 300_000);
});
