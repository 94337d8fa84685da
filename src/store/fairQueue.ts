/**
 * The fair queue of a provider key's slots (docs/design.md, "Fair shares and budgets"), inside the write
 * transaction of a slot reservation (`slots.ts`), which holds the key's limit row (PostgreSQL:
 * `FOR UPDATE`; SQLite: the database): when accounts wait for the same key, its free slots go to
 * them by weight, by stride scheduling (start-time fair queuing, an equivalent of deficit
 * round-robin). Each account has a pass per key; the waiting account with the lowest pass
 * (`max(pass, the key's virtual time)`, so an account that was idle saves no credit) takes the next
 * slot and its pass grows by `1 / weight`; ties go to the account holding fewer of the key's slots.
 * Within an account its waiting jobs go by priority (higher first), then age. A slot given to a
 * job that is not the one asking is a grant: it counts as active for {@link GRANT_LEASE_MS} while
 * the job is told to submit now, then lapses.
 */
import { type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import { DEFAULT_WEIGHT } from '../model/budgets.js';
import { nowIso } from './rows.js';
import type { Database } from './schema.js';

/** How long a slot granted to a waiting job counts as taken before it lapses, ms. */
export const GRANT_LEASE_MS = 30_000;

/** States whose provider task may be running (or may exist: an unanswered submit), or that wait to submit. */
export const ACTIVE_STATES = ['submitting', 'unknown', 'pending', 'cancelling'];

/** How the `waiting` JSON of a job held by its budget begins: such a job waits for money, not a slot. */
const BUDGET_WAIT = '{"reason":"budget"%';

/** An expression builder over the jobs table (a subquery's alias of it, for the same unqualified columns). */
export type JobsEb = ExpressionBuilder<Database, 'jobs'>;

/** A job that holds one of its key's slots: a task or an unanswered intent, or a grant younger than the lease. */
export function holdsSlot(eb: JobsEb, leaseCutoff: string): Expression<SqlBool> {
  return eb.or([
    eb.and([
      eb('state', 'in', ACTIVE_STATES),
      eb.or([eb('task_id', 'is not', null), eb('submit_intent_at', 'is not', null)]),
    ]),
    eb.and([
      eb('state', '=', 'submitting'),
      eb('task_id', 'is', null),
      eb('submit_intent_at', 'is', null),
      eb('slot_granted_at', '>', leaseCutoff),
    ]),
  ]);
}

/** A job waiting for one of its key's slots: registered, nothing submitted, no live grant, not held by its budget. */
export function waitsForSlot(eb: JobsEb, leaseCutoff: string): Expression<SqlBool> {
  return eb.and([
    eb('state', '=', 'submitting'),
    eb('task_id', 'is', null),
    eb('submit_intent_at', 'is', null),
    eb.or([eb('slot_granted_at', 'is', null), eb('slot_granted_at', '<=', leaseCutoff)]),
    eb.or([eb('waiting', 'is', null), eb('waiting', 'not like', BUDGET_WAIT)]),
  ]);
}

/** A slot given to a waiting job that did not ask for it now: the caller tells its workflow to submit. */
export interface SlotGrant {
  jobId: string;
  workflowId: string;
  account: string;
}

/** The job asking for a slot, when one asks. */
export interface Asking {
  id: string;
  account: string;
  priority: number;
}

/** What the fair queue decided for the free slots of a key (nothing written yet: see {@link applyFairPlan}). */
export interface FairPlan {
  label: string;
  /** Whether the asking job takes one of the slots. */
  mine: boolean;
  /** The waiting jobs given the other slots. */
  grants: SlotGrant[];
  /** Each winning account's new pass. */
  passes: Map<string, { pass: number; granted: number }>;
  /** The key's virtual time after the decision. */
  vtime: number;
  /** Which account's turn it was first (for the asking job's wait message). */
  first?: string;
}

/**
 * Plans who takes the `free` slots of key `label` (reads only): the waiting accounts in fair order
 * (see the module docs), the asking job among its account's waiting jobs by priority. `vtime`: the
 * key's virtual time; `weightOf`: an account's weight (> 0).
 */
export async function planFair(
  trx: Kysely<Database>,
  label: string,
  free: number,
  vtime: number,
  asking: Asking | undefined,
  weightOf: (account: string) => number,
  leaseCutoff: string,
): Promise<FairPlan> {
  const stats = await trx
    .selectFrom('jobs')
    .select((eb) => [
      'account',
      eb.fn.sum<number>(eb.case().when(waitsForSlot(eb, leaseCutoff)).then(1).else(0).end()).as('waiting'),
      eb.fn.sum<number>(eb.case().when(holdsSlot(eb, leaseCutoff)).then(1).else(0).end()).as('active'),
    ])
    .where('provider_key', '=', label)
    .where('state', 'in', ACTIVE_STATES)
    .groupBy('account')
    .execute();
  const shares = await trx.selectFrom('fair_shares').selectAll().where('label', '=', label).execute();
  const pass = new Map(shares.map((s) => [s.account, { pass: Number(s.pass), granted: Number(s.granted) }]));
  const q = stats
    .map((s) => ({ account: s.account, waiting: Number(s.waiting), active: Number(s.active) }))
    .filter((s) => s.waiting > 0);
  const plan: FairPlan = { label, mine: false, grants: [], passes: new Map(), vtime };
  const wins = new Map<string, number>();
  for (let slot = 0; slot < free && q.length > 0; slot++) {
    const start = (a: string) => Math.max(plan.passes.get(a)?.pass ?? pass.get(a)?.pass ?? vtime, plan.vtime);
    q.sort((x, y) => start(x.account) - start(y.account) || x.active - y.active || (x.account < y.account ? -1 : 1));
    const w = q[0]!;
    const s = start(w.account);
    plan.first ??= w.account;
    plan.vtime = s;
    const before = plan.passes.get(w.account) ?? { pass: s, granted: pass.get(w.account)?.granted ?? 0 };
    plan.passes.set(w.account, { pass: s + 1 / Math.max(1e-6, weightOf(w.account)), granted: before.granted + 1 });
    wins.set(w.account, (wins.get(w.account) ?? 0) + 1);
    w.waiting--;
    w.active++;
    if (w.waiting === 0) q.shift();
  }
  for (const [account, n] of wins) {
    const heads = await trx
      .selectFrom('jobs')
      .select(['id', 'workflow_id', 'priority'])
      .where('provider_key', '=', label)
      .where('account', '=', account)
      .where((eb) => waitsForSlot(eb, leaseCutoff))
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .orderBy('id')
      .limit(n)
      .execute();
    let taken = heads;
    if (asking && account === asking.account) {
      // The asking job takes its account's turn unless one of its own jobs of higher priority waits.
      const last = heads.at(-1);
      if (heads.some((h) => h.id === asking.id) || (last && Number(last.priority) <= asking.priority)) {
        plan.mine = true;
        taken = heads.filter((h) => h.id !== asking.id).slice(0, n - 1);
      }
    }
    for (const h of taken) plan.grants.push({ jobId: h.id, workflowId: h.workflow_id, account });
  }
  return plan;
}

/** Writes `plan`: the grants, each winning account's pass, the key's virtual time. */
export async function applyFairPlan(trx: Kysely<Database>, plan: FairPlan): Promise<void> {
  const at = nowIso();
  if (plan.grants.length > 0)
    await trx
      .updateTable('jobs')
      .set({ slot_granted_at: at })
      .where(
        'id',
        'in',
        plan.grants.map((g) => g.jobId),
      )
      .execute();
  if (plan.passes.size > 0)
    await trx
      .insertInto('fair_shares')
      .values(
        [...plan.passes].map(([account, p]) => ({
          label: plan.label,
          account,
          pass: p.pass,
          granted: p.granted,
          updated_at: at,
        })),
      )
      .onConflict((oc) =>
        oc.columns(['label', 'account']).doUpdateSet((eb) => ({
          pass: eb.ref('excluded.pass'),
          granted: eb.ref('excluded.granted'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      .execute();
  await trx.updateTable('provider_limits').set({ fair_vtime: plan.vtime }).where('label', '=', plan.label).execute();
}

/** The weight of `account` in `weights` (configuration), {@link DEFAULT_WEIGHT} when it has none. */
export function weightIn(weights: Readonly<Record<string, number>> | undefined, account: string): number {
  const w = weights?.[account];
  return w !== undefined && w > 0 ? w : DEFAULT_WEIGHT;
}
