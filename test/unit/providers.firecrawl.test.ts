/**
 * The `firecrawl` kind's configuration for a self-hosted server (Firecrawl's own, run without
 * Supabase): what `selfHosted` changes (no idempotency header unless asked, no team-activity
 * lookup in its evidence, unsigned webhooks by default), the refusal of an entry that expects
 * signed deliveries from a server that never signs, and the configurations of
 * `docs/providers/firecrawl.md`, parsed as the worker parses them.
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { canReconcile } from '../../src/model/evidence.js';
import {
  FirecrawlAdapter,
  firecrawlProvider,
  firecrawlSendsIdempotencyKey,
  firecrawlSignsWebhooks,
  type FirecrawlEntry,
} from '../../src/providers/firecrawl/index.js';

const parse = (e: Record<string, unknown>): FirecrawlEntry =>
  firecrawlProvider.entrySchema.parse({ kind: 'firecrawl', credentials: {}, ...e }) as FirecrawlEntry;

function config(e: Record<string, unknown>) {
  return parseConfig({
    defaultProvider: 'fc',
    providers: { fc: { kind: 'firecrawl', credentials: { default: { apiKeyEnv: 'FC_KEY' } }, ...e } },
  });
}

describe('firecrawl: self-hosted entries', () => {
  it('the hosted API keeps the key on crawls, both lookups and signed webhooks; a self-hosted entry drops the key (unless asked), the team activity and the signature', () => {
    const hosted = parse({ operation: 'crawl' });
    expect([firecrawlSendsIdempotencyKey(hosted), firecrawlSignsWebhooks(hosted)]).toEqual([true, true]);
    const hostedAdapter = new FirecrawlAdapter('fc', hosted);
    expect(hostedAdapter.evidence.replay).toBe('conflict');
    expect(hostedAdapter.evidence.lookups.map((l) => l.name)).toEqual([
      'GET /v2/crawl/active',
      'GET /v2/team/activity',
    ]);

    const self = parse({ operation: 'crawl', selfHosted: {} });
    expect(self.selfHosted).toEqual({ idempotencyHeader: false });
    expect([firecrawlSendsIdempotencyKey(self), firecrawlSignsWebhooks(self)]).toEqual([false, false]);
    const a = new FirecrawlAdapter('fc', self);
    expect(a.capabilities).toMatchObject({ idempotency: false, list: true });
    expect(a.evidence).toMatchObject({
      replay: 'none',
      lookups: [{ name: 'GET /v2/crawl/active', shows: ['queued', 'running'] }],
    });
    expect(a.evidence.source).toContain('self-hosted');

    const keyed = parse({ operation: 'crawl', selfHosted: { idempotencyHeader: true } });
    expect(new FirecrawlAdapter('fc', keyed).evidence.replay).toBe('conflict');

    // A self-hosted batch entry has no lookup at all: a lost batch submit is never proven absent.
    const batch = new FirecrawlAdapter('fc', parse({ operation: 'batch', selfHosted: {} }));
    expect(batch.evidence).toMatchObject({ replay: 'none', lookups: [] });
    expect(canReconcile(batch.evidence)).toBe(false);
    expect(batch.capabilities).toMatchObject({ idempotency: false, list: false });
  });

  it('a self-hosted entry expecting signed webhooks is refused at configuration, naming webhookSignature; unsigned or unsaid is accepted', () => {
    const webhook = { url: 'https://api.example.com/v1/webhooks/fc', secretEnv: 'FC_WEBHOOK' };
    expect(() =>
      config({ operation: 'crawl', selfHosted: { idempotencyHeader: false }, webhookSignature: true, webhook }),
    ).toThrow(/webhookSignature[\s\S]*providers\.fc\.webhookSignature/);
    expect(config({ operation: 'crawl', selfHosted: {}, webhook }).providers.fc).toMatchObject({
      selfHosted: { idempotencyHeader: false },
    });
    expect(config({ operation: 'crawl', selfHosted: {}, webhookSignature: false, webhook }).providers.fc).toMatchObject(
      { webhookSignature: false },
    );
    expect(() => config({ selfHosted: { idempotency: false } })).toThrow(/idempotency/);
  });
});

describe('docs/providers/firecrawl.md', () => {
  it('its two complete configurations (hosted, self-hosted) are valid as written, and say what they claim', () => {
    const doc = fs.readFileSync(new URL('../../docs/providers/firecrawl.md', import.meta.url), 'utf8');
    const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => parseConfig(JSON.parse(m[1]!)));
    expect(blocks).toHaveLength(2);
    const [hosted, self] = blocks as [ReturnType<typeof parseConfig>, ReturnType<typeof parseConfig>];
    for (const e of Object.values(hosted.providers)) {
      expect(e).toMatchObject({ kind: 'firecrawl', baseUrl: 'https://api.firecrawl.dev' });
      expect(firecrawlSignsWebhooks(e as FirecrawlEntry)).toBe(true);
    }
    for (const [name, e] of Object.entries(self.providers)) {
      const a = new FirecrawlAdapter(name, e as FirecrawlEntry);
      expect(firecrawlSignsWebhooks(e as FirecrawlEntry)).toBe(false);
      expect(a.evidence.lookups.map((l) => l.name)).not.toContain('GET /v2/team/activity');
      expect(a.capabilities.idempotency).toBe(false);
    }
  });
});
