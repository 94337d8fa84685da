/**
 * A provider kind, described once: its name, the zod schema of its own configuration fields, how to
 * build its adapter, how its webhooks are verified and parsed, what it can do (capabilities, expiry)
 * and the published contract it follows. `kinds.ts` lists every kind; the configuration schema,
 * the registry, the webhook receiver and the tables of docs/providers.md are built from that list.
 *
 * A kind lives in `src/providers/<kind>/`: `config.ts` (its fields), `adapter.ts` (the
 * {@link ProviderAdapter}), `webhook.ts` (its {@link ProviderWebhook}, when it has webhooks) and
 * `index.ts` exporting one descriptor made with {@link defineProvider}.
 */
import { z } from 'zod';
import type { ReconcileEvidence } from '../model/evidence.js';
import type { PollPolicy } from '../model/types.js';
import { providerEntrySchema, type EntrySchemaOf } from './shared/entry.js';
import type { ProviderAdapter, ProviderCapabilities } from './adapter.js';
import type { ProviderCostModel } from './shared/cost.js';
import type { WebhookHeaders } from './shared/webhook.js';

/** What a provider's webhook event says, once parsed (a hint only: never trusted for the result). */
export interface ParsedEvent {
  /**
   * The event's ID, stable across redeliveries (dedupe key per provider): the provider's event or
   * dispatch ID (Apify `X-Apify-Webhook-Dispatch-Id`, Firecrawl `webhookId`), else `bodyEventId`.
   */
  eventId: string;
  /** Event type as the provider names it (e.g. `job.completed`, `ACTOR.RUN.SUCCEEDED`). */
  type: string;
  /** The provider's task ID, when the event names it. */
  taskId: string | null;
  /** Our client reference echoed by the provider, when it does. */
  clientRef: string | null;
  /** The provider status the event claims (a hint only). */
  providerStatus: string | null;
}

/** Outcome of {@link ProviderWebhook.parse}: the event, or zod's issues as a message. */
type ParseOutcome = { ok: true; event: ParsedEvent } | { ok: false; message: string };

/**
 * How one kind's webhook deliveries are authenticated and read. Two schemes:
 * - **signed** (`signed(entry)` true): the provider signs the raw body with the secret we
 *   registered; deliveries go to `POST /v1/webhooks/<name>` and {@link verify} checks them;
 * - **token** (false): the provider does not sign; each job's callback URL ends with an
 *   unguessable per-job token (`POST /v1/webhooks/<name>/<token>`) that the receiver checks in
 *   constant time against the job it matched.
 */
export interface ProviderWebhook<Entry = unknown> {
  /** Whether deliveries for this entry are signed (see above). */
  signed(entry: Entry): boolean;
  /** Request header carrying the signature (lower-case), named in error messages and redacted in logs. */
  signatureHeader?: string;
  /** The signature header of `entry`, for kinds where it is configuration (the declarative `http` kind); else {@link signatureHeader}. */
  signatureHeaderOf?(entry: Entry): string | undefined;
  /** Verifies a signed delivery in constant time. Required when {@link signed} can be true. `entry`: the provider's parsed entry (the receiver always passes it; kinds whose scheme is fixed ignore it). */
  verify?(rawBody: Buffer, headers: WebhookHeaders, secret: string, entry?: Entry): boolean;
  /** The event ID a delivery claims before it is verified (labels quarantine rows); null when none. */
  claimedEventId?(json: unknown, headers: WebhookHeaders, entry?: Entry): string | null;
  /** Parses a delivery (`json`: the parsed JSON body, undefined when it was not JSON; `entry`: the provider's parsed entry). */
  parse(json: unknown, headers: WebhookHeaders, rawBody: Buffer, entry?: Entry): ParseOutcome;
}

/**
 * The {@link ProviderWebhook} of a kind that does not sign (per-job token URL) and whose delivery
 * names a task and its status: the body is validated with `schema` (zod's issues as the message);
 * the event ID is `<taskId>:<status>`, the same on every redelivery of one state; the type is
 * `<typePrefix>.<status>`.
 */
export function statusCallbackWebhook<S extends z.ZodType>(
  schema: S,
  typePrefix: string,
  read: (body: z.infer<S>) => { taskId: string; status: string; clientRef: string | null },
): ProviderWebhook {
  return {
    signed: () => false,
    claimedEventId(json) {
      const p = schema.safeParse(json);
      if (!p.success) return null;
      const { taskId, status } = read(p.data);
      return `${taskId}:${status}`.slice(0, 200);
    },
    parse(json) {
      const p = schema.safeParse(json);
      if (!p.success) return { ok: false, message: z.prettifyError(p.error) };
      const { taskId, status, clientRef } = read(p.data);
      return {
        ok: true,
        event: {
          eventId: `${taskId}:${status}`,
          type: `${typePrefix}.${status}`,
          taskId,
          clientRef,
          providerStatus: status,
        },
      };
    },
  };
}

/** A descriptor made by {@link defineProvider}. */
export interface ProviderDescriptor<K extends string = string, S extends z.ZodRawShape = z.ZodRawShape> {
  /** The `kind` of the configuration entries this descriptor handles (e.g. `firecrawl`). */
  readonly kind: K;
  /** Display name (docs/providers.md, errors). */
  readonly title: string;
  /** The published contract this kind follows: document, URL and version (or date read). */
  readonly contract: string;
  /** The kind's own configuration fields (with `kind: z.literal(kind)`). */
  readonly configSchema: z.ZodObject<S>;
  /** The whole entry schema: the kind's fields plus the common ones (`entry.ts`), strict. */
  readonly entrySchema: EntrySchemaOf<S>;
  /** What the provider can do per its documentation (an adapter may narrow it by configuration). */
  readonly capabilities: ProviderCapabilities;
  /**
   * What the kind's replays and lookups prove after a lost submit, per shape of entry (`label`:
   * the operation or configuration it holds for; the adapter of an entry declares its own): the
   * evidence table of docs/providers.md is built from it.
   */
  readonly evidence: readonly { label: string; evidence: ReconcileEvidence }[];
  /**
   * How long after a task is created its reads may still answer `404` (the provider has not shown
   * it yet), ms, and the document or observation that says so: a `404` for a younger task is "not
   * visible yet", never counted toward expiry. An entry's `notFoundGraceMs` overrides it.
   */
  readonly notFoundGrace: { ms: number; source: string };
  /** How the provider expires a task's result (docs/providers.md), e.g. `404 after 24 h`. */
  readonly expiry: string;
  /**
   * What a job of this kind costs (docs/budgets.md): the provider's unit, the estimate before a
   * submit, the field that reports the cost after, and what a failed task costs.
   */
  readonly cost: ProviderCostModel<z.infer<EntrySchemaOf<S>>>;
  /** Poll policy defaults of the kind (between `DEFAULT_POLL_POLICY` and the entry's `poll`). */
  readonly poll?: Partial<PollPolicy>;
  /** Webhook verification and parsing; absent when the provider has no webhooks. */
  readonly webhook?: ProviderWebhook<z.infer<EntrySchemaOf<S>>>;
  /** Builds the adapter of the configured provider `name` from its parsed entry. */
  create(name: string, entry: z.infer<EntrySchemaOf<S>>): ProviderAdapter;
  /** Checks across fields of a parsed entry (the kind's and the common ones); issues fail the configuration with their path. */
  refineEntry?(entry: z.infer<EntrySchemaOf<S>>, ctx: z.RefinementCtx): void;
  /**
   * Whether the entry's calls send a credential (default: always). An entry that sends none needs
   * no `credentials`, and its jobs need no credential of their account (the `http` kind's
   * `auth: {in: "none"}`: a self-hosted server without authentication).
   */
  credentialNeeded?(entry: z.infer<EntrySchemaOf<S>>): boolean;
}

/** Any descriptor (the registry and the receiver do not need the kind's types). */
export type AnyProviderDescriptor = ProviderDescriptor<string, any>;

/**
 * Makes a descriptor from a kind's spec: builds `entrySchema` from `configSchema` and the common
 * fields; an entry configuring `webhook` for a kind without webhooks fails validation, so does an
 * entry without `credentials` whose calls send one ({@link ProviderDescriptor.credentialNeeded}),
 * and the kind's `refineEntry` (checks across fields) runs on every parsed entry.
 */
export function defineProvider<K extends string, S extends { kind: z.ZodLiteral<K> } & z.ZodRawShape>(
  spec: Omit<ProviderDescriptor<K, S>, 'entrySchema'>,
): ProviderDescriptor<K, S> {
  const base = providerEntrySchema(spec.configSchema.shape);
  const hooked = spec.webhook
    ? base
    : base.refine((e: { webhook?: unknown }) => e.webhook === undefined, {
        message: `provider kind "${spec.kind}" has no webhooks; remove "webhook"`,
        path: ['webhook'],
      });
  const refine = spec.refineEntry;
  const needed = spec.credentialNeeded;
  const entrySchema = hooked.superRefine((e, ctx) => {
    const entry = e as z.infer<EntrySchemaOf<S>>;
    if ((e as { credentials?: unknown }).credentials === undefined && (!needed || needed(entry)))
      ctx.addIssue({
        code: 'custom',
        path: ['credentials'],
        message:
          'credentials is required: add credentials.default (or credentials.accounts.<account>), {} to give them later',
      });
    refine?.(entry, ctx);
  });
  return { ...spec, entrySchema };
}
