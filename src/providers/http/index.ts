/**
 * The declarative `http` kind: any "submit, get an ID, poll" API described in configuration
 * (`config.ts`), with templates and JSON Pointers (`template.ts`), no code. Its contract is the
 * entry; docs/providers.md has a worked example, `docs/providers/scrapyd.md` a complete one that
 * the real-server suite runs against Scrapyd.
 */
import { defineProvider } from '../descriptor.js';
import { HttpAdapter } from './adapter.js';
import { httpEvidence } from './lookups.js';
import { checkHttpEntry, HttpConfigSchema } from './config.js';
import { httpWebhook } from './webhook.js';

export { HttpAdapter, mapStatus } from './adapter.js';
export type { HttpEntry } from './config.js';

/** Descriptor of the `http` kind. */
export const httpProvider = defineProvider({
  kind: 'http',
  title: 'Declarative HTTP API (202-and-poll by configuration)',
  contract:
    'the provider entry itself: submit/status/result/cancel/list/webhookScheme templates and JSON Pointers (RFC 6901), src/providers/http/config.ts',
  configSchema: HttpConfigSchema,
  // What an entry can configure; the adapter narrows it to what the entry does configure.
  capabilities: { idempotency: true, list: true, cancel: true, webhooks: true },
  evidence: [
    {
      label: 'as an entry declares it (here: the reference contract)',
      evidence: httpEvidence({
        submit: { idempotent: true },
        list: {
          method: 'GET',
          path: '/api/jobs',
          shows: ['queued', 'running', 'finished'],
          finishedForMs: null,
          lagMs: 30_000,
          match: '{{clientRef}}',
        },
        auth: { in: 'header' },
      }),
    },
  ],
  notFoundGrace: {
    ms: 60_000,
    source:
      "the declarative kind cannot know its server; the product's default window (set the entry's `notFoundGraceMs`)",
  },
  expiry:
    'as configured: errors.expiredCodes / expiredStatusCodes (default 410) → expired; 404 (or a missing status word with status.missing: "not_found") counted, then expired (errors.notFound)',
  cost: {
    unit: (entry) => (entry.status.progress?.creditsUsed ? 'credits' : 'requests'),
    estimate: () => 1,
    reports: (entry) => entry.status.progress?.creditsUsed !== undefined,
    failed: 'estimate',
    doc: {
      unit: 'credits with `status.progress.creditsUsed`, else requests',
      estimate: '1 per job',
      reported: "the status answer at the entry's `status.progress.creditsUsed` pointer (the entry is the contract)",
    },
  },
  webhook: httpWebhook,
  refineEntry: checkHttpEntry,
  credentialNeeded: (entry) => entry.auth.in !== 'none',
  create: (name, entry) => new HttpAdapter(name, entry),
});
