/**
 * Fault rules of the reference provider: which request misbehaves, how, and how often.
 *
 * Matching (for one API request of account `A` on endpoint `E`, with target URL `U` when known —
 * the submit body's `url`, or the job's `url` for status/logs/cancel):
 * a rule matches when its `account` is absent or `A`, its `endpoint` is `any` or `E`, its action
 * applies to `E` (see `ACTION_ENDPOINTS`), its `urlContains` is absent or a substring of `U`, and
 * it has `times` left. A matching rule then fires with its `probability`.
 *
 * Request-level actions: the first rule (in insertion order) that fires wins; a per-request
 * `X-Sim-Fault` rule is considered before the registry. Job-level actions (`fail_job`,
 * `never_finish`, `hold`, `forget`): every rule that fires marks the job created by the submit.
 * `times` is decremented when a rule fires; a rule with no `times` left stays listed but inert.
 */
import { randomUUID } from 'node:crypto';
import {
  ACTION_ENDPOINTS,
  FaultRuleSchema,
  JOB_LEVEL_ACTIONS,
  type Endpoint,
  type FaultRule,
  type FaultRuleInput,
} from './schemas.js';

/** A rule as stored: the parsed rule with its `id`, and how many times it has fired. */
export interface StoredFaultRule extends FaultRule {
  id: string;
  /** How many times the rule has fired since it was added. */
  fired: number;
}

/** What a request is matched against. */
export interface FaultContext {
  account: string;
  endpoint: Endpoint;
  /** Target URL (submit body `url` or the job's `url`), when known. */
  url?: string | undefined;
}

/**
 * The set of fault rules of one sim. Available as `sim.faults`.
 * Rules are validated with {@link FaultRuleSchema}; invalid rules throw a `ZodError`.
 */
export class FaultRegistry {
  private readonly rules: StoredFaultRule[] = [];

  /** @param random source of randomness in [0, 1) used for `probability`. */
  constructor(private readonly random: () => number = Math.random) {}

  /**
   * Add a rule (or replace the rule with the same `id`).
   * @returns the rule's id (the given `id`, or a generated `fault_<uuid>`).
   * @throws ZodError when the rule is invalid.
   */
  add(rule: FaultRuleInput): string {
    const parsed = FaultRuleSchema.parse(rule);
    const id = parsed.id ?? `fault_${randomUUID()}`;
    const stored: StoredFaultRule = { ...parsed, id, fired: 0 };
    const existing = this.rules.findIndex((r) => r.id === id);
    if (existing >= 0) this.rules[existing] = stored;
    else this.rules.push(stored);
    return id;
  }

  /** Remove one rule. @returns true when a rule with that id existed. */
  remove(id: string): boolean {
    const i = this.rules.findIndex((r) => r.id === id);
    if (i < 0) return false;
    this.rules.splice(i, 1);
    return true;
  }

  /** Remove every rule. */
  clear(): void {
    this.rules.length = 0;
  }

  /** Snapshot of the rules (copies), in insertion order. */
  list(): StoredFaultRule[] {
    return this.rules.map((r) => ({ ...r }));
  }

  /**
   * Pick the request-level rule that fires for this request, if any, consuming one of its `times`.
   * @param extra a per-request rule (from `X-Sim-Fault`), considered first; it never consumes.
   */
  pickRequestFault(ctx: FaultContext, extra?: FaultRule): FaultRule | undefined {
    if (extra && !JOB_LEVEL_ACTIONS.has(extra.action) && ruleMatches(extra, ctx) && this.roll(extra)) {
      return extra;
    }
    for (const rule of this.rules) {
      if (JOB_LEVEL_ACTIONS.has(rule.action)) continue;
      if (!this.available(rule) || !ruleMatches(rule, ctx)) continue;
      if (!this.roll(rule)) continue;
      this.consume(rule);
      return rule;
    }
    return undefined;
  }

  /**
   * Every job-level rule that fires for a submit that is about to create a job (each consumes one
   * of its `times`). Call only when a job is really created.
   * @param extra a per-request rule (from `X-Sim-Fault`), considered first.
   */
  pickJobFaults(ctx: FaultContext, extra?: FaultRule): FaultRule[] {
    const out: FaultRule[] = [];
    if (extra && JOB_LEVEL_ACTIONS.has(extra.action) && ruleMatches(extra, ctx) && this.roll(extra)) {
      out.push(extra);
    }
    for (const rule of this.rules) {
      if (!JOB_LEVEL_ACTIONS.has(rule.action)) continue;
      if (!this.available(rule) || !ruleMatches(rule, ctx)) continue;
      if (!this.roll(rule)) continue;
      this.consume(rule);
      out.push(rule);
    }
    return out;
  }

  private available(rule: StoredFaultRule): boolean {
    return rule.times === undefined || rule.times > 0;
  }

  private roll(rule: FaultRule): boolean {
    return rule.probability >= 1 || this.random() < rule.probability;
  }

  private consume(rule: StoredFaultRule): void {
    rule.fired += 1;
    if (rule.times !== undefined) rule.times -= 1;
  }
}

/** Whether `rule` applies to a request described by `ctx` (ignoring `times` and `probability`). */
export function ruleMatches(rule: FaultRule, ctx: FaultContext): boolean {
  if (rule.account !== undefined && rule.account !== ctx.account) return false;
  if (rule.endpoint !== 'any' && rule.endpoint !== ctx.endpoint) return false;
  if (!ACTION_ENDPOINTS[rule.action].includes(ctx.endpoint)) return false;
  if (rule.urlContains !== undefined && !(ctx.url ?? '').includes(rule.urlContains)) return false;
  return true;
}
