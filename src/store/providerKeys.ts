/**
 * What every worker shares about a provider key (`store.providerKeys`): its cool-down and the
 * release slots after it, and the refusals a provider counts toward blocking the caller. It is the
 * `ProviderSharedState` the provider registry is handed (providers never import the store). Keys
 * are `<kind>@<host>#<credential fingerprint>`; refusal scopes what the provider counts per
 * (`brightdata@<host>`). Times are epoch ms at this interface, UTC ISO-8601 in the rows.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { CooldownState } from '../model/types.js';
import type { StoreConnection } from './connection.js';
import { cooldownOf, nowIso } from './rows.js';

/** The store's shared state of provider keys. Reach it as `store.providerKeys`. */
export class ProviderKeysRepository {
  constructor(private readonly conn: StoreConnection) {}

  /**
   * The shared cool-down of a provider key as stored: its end (`untilMs`), its reason and the next
   * free release slot after it (`releaseNextMs`, 0 when none was claimed); epoch ms. Undefined when
   * the key never had one.
   */
  async readCooldown(label: string): Promise<CooldownState | undefined> {
    return (await this.readCooldowns([label])).get(label);
  }

  /** {@link readCooldown} of each of `labels`, in one statement: label → state, for each that ever had one. */
  async readCooldowns(labels: readonly string[]): Promise<Map<string, CooldownState>> {
    const out = new Map<string, CooldownState>();
    if (labels.length === 0) return out;
    const rows = await this.conn.db
      .selectFrom('provider_cooldowns')
      .select(['label', 'until', 'reason', 'release_next'])
      .where('label', 'in', [...labels])
      .execute();
    for (const row of rows) out.set(row.label, cooldownOf(row)!);
    return out;
  }

  /**
   * Starts or extends (never shortens) the shared cool-down of a provider key until `untilMs`
   * (epoch ms); the reason is the one of the cool-down that ends last.
   */
  async setCooldown(label: string, untilMs: number, reason: string): Promise<void> {
    const until = new Date(untilMs).toISOString();
    const at = nowIso();
    await this.conn.db
      .insertInto('provider_cooldowns')
      .values({ label, until, reason, updated_at: at })
      .onConflict((oc) =>
        oc.column('label').doUpdateSet({
          until: sql`case when excluded.until > provider_cooldowns.until then excluded.until else provider_cooldowns.until end`,
          reason: sql`case when excluded.until > provider_cooldowns.until then excluded.reason else provider_cooldowns.reason end`,
          updated_at: at,
        }),
      )
      .execute();
    this.conn.metrics.cooldown(label);
  }

  /**
   * Claims the next release slot of a provider key's cool-down, atomically (one write transaction;
   * the row locked on PostgreSQL), so that waiting callers leave one at a time: the slot is
   * `max(release_next, cool-down end, nowMs)` and `release_next` moves to the slot plus
   * `spacingMs`. The first claim after a cool-down gets its end (the probe). Returns the slot and
   * the cool-down it was claimed under (epoch ms), or undefined when the key has no cool-down row.
   */
  async claimRelease(
    label: string,
    nowMs: number,
    spacingMs: (sinceEndMs: number) => number,
  ): Promise<{ slotMs: number; untilMs: number; reason: string } | undefined> {
    return this.conn.tx(async (trx) => {
      let q = trx
        .selectFrom('provider_cooldowns')
        .select(['until', 'reason', 'release_next'])
        .where('label', '=', label);
      if (this.conn.kind === 'postgres') q = q.forUpdate();
      const row = await q.executeTakeFirst();
      if (!row) return undefined;
      const untilMs = Date.parse(row.until);
      const slotMs = Math.max(row.release_next ? Date.parse(row.release_next) : 0, untilMs, nowMs);
      await trx
        .updateTable('provider_cooldowns')
        .set({ release_next: new Date(slotMs + Math.max(0, spacingMs(slotMs - untilMs))).toISOString() })
        .where('label', '=', label)
        .execute();
      return { slotMs, untilMs, reason: row.reason };
    });
  }

  /**
   * Records one refusal that counts toward a provider's block of the caller (Bright Data: 25 × 429
   * in 5 min block the IP) at `atMs` under `scope` (`brightdata@<host>`), and deletes that scope's
   * refusals older than `pruneBeforeMs` (epoch ms).
   */
  async recordRefusal(scope: string, atMs: number, pruneBeforeMs: number): Promise<void> {
    await this.conn.db
      .insertInto('provider_refusals')
      .values({ id: randomUUID(), scope, at: new Date(atMs).toISOString() })
      .execute();
    await this.conn.db
      .deleteFrom('provider_refusals')
      .where('scope', '=', scope)
      .where('at', '<', new Date(pruneBeforeMs).toISOString())
      .execute();
  }

  /** The times (epoch ms, oldest first) of the refusals recorded under `scope` after `sinceMs`. */
  async refusalsSince(scope: string, sinceMs: number): Promise<number[]> {
    const rows = await this.conn.db
      .selectFrom('provider_refusals')
      .select('at')
      .where('scope', '=', scope)
      .where('at', '>', new Date(sinceMs).toISOString())
      .orderBy('at')
      .execute();
    return rows.map((r) => Date.parse(r.at));
  }
}
