/**
 * Unit tests of the sim's fault registry (tools/sim/faults.ts): matching, probability, `times`.
 */
import { describe, expect, it } from 'vitest';
import { ZodError } from 'zod';
import { FaultRegistry, ruleMatches } from '../../tools/sim/faults.js';
import { FaultRuleSchema } from '../../tools/sim/schemas.js';

const ctx = (
  over: Partial<{ account: string; endpoint: 'submit' | 'status' | 'logs' | 'cancel' | 'list'; url: string }> = {},
) => ({
  account: 'acme',
  endpoint: 'submit' as const,
  url: 'http://t.test/page',
  ...over,
});

describe('FaultRegistry', () => {
  it('fires a rule `times` times, then keeps it listed but inert', () => {
    const reg = new FaultRegistry();
    const id = reg.add({ action: 'error_5xx', times: 2 });
    expect(reg.pickRequestFault(ctx())?.action).toBe('error_5xx');
    expect(reg.pickRequestFault(ctx())?.action).toBe('error_5xx');
    expect(reg.pickRequestFault(ctx())).toBeUndefined();
    expect(reg.list()).toEqual([expect.objectContaining({ id, times: 0, fired: 2 })]);
  });

  it('picks the first matching request-level rule, in insertion order', () => {
    const reg = new FaultRegistry();
    reg.add({ action: 'rate_limit', endpoint: 'status' });
    reg.add({ action: 'delay', delayMs: 5 });
    reg.add({ action: 'error_5xx' });
    expect(reg.pickRequestFault(ctx())?.action).toBe('delay');
    expect(reg.pickRequestFault(ctx({ endpoint: 'status' }))?.action).toBe('rate_limit');
  });

  it('honours probability with the injected random source', () => {
    const rolls = [0.9, 0.1];
    const reg = new FaultRegistry(() => rolls.shift() ?? 0);
    reg.add({ action: 'error_5xx', probability: 0.5, times: 1 });
    expect(reg.pickRequestFault(ctx())).toBeUndefined(); // 0.9 ≥ 0.5: not fired, times kept
    expect(reg.list()[0]?.times).toBe(1);
    expect(reg.pickRequestFault(ctx())?.action).toBe('error_5xx'); // 0.1 < 0.5
    expect(reg.list()[0]?.times).toBe(0);
  });

  it('separates job-level rules (all fire) from request-level rules', () => {
    const reg = new FaultRegistry();
    reg.add({ action: 'hold' });
    reg.add({ action: 'forget', delayMs: 10 });
    reg.add({ action: 'fail_job', urlContains: 'other' });
    expect(reg.pickRequestFault(ctx())).toBeUndefined();
    expect(reg.pickJobFaults(ctx()).map((r) => r.action)).toEqual(['hold', 'forget']);
  });

  it('puts a per-request header rule first without consuming registry rules', () => {
    const reg = new FaultRegistry();
    reg.add({ action: 'error_5xx', times: 1 });
    const header = FaultRuleSchema.parse({ action: 'rate_limit' });
    expect(reg.pickRequestFault(ctx(), header)?.action).toBe('rate_limit');
    expect(reg.list()[0]?.times).toBe(1);
    const jobHeader = FaultRuleSchema.parse({ action: 'never_finish' });
    expect(reg.pickJobFaults(ctx(), jobHeader).map((r) => r.action)).toEqual(['never_finish']);
  });

  it('replaces a rule with the same id, removes and clears', () => {
    const reg = new FaultRegistry();
    expect(reg.add({ id: 'a', action: 'delay', delayMs: 1 })).toBe('a');
    reg.add({ id: 'a', action: 'error_5xx' });
    expect(reg.list().map((r) => r.action)).toEqual(['error_5xx']);
    const generated = reg.add({ action: 'rate_limit' });
    expect(generated).toMatch(/^fault_/);
    expect(reg.remove('a')).toBe(true);
    expect(reg.remove('a')).toBe(false);
    reg.clear();
    expect(reg.list()).toEqual([]);
  });

  it('rejects invalid rules with a ZodError', () => {
    const reg = new FaultRegistry();
    expect(() => reg.add({ action: 'explode' } as never)).toThrow(ZodError);
    expect(() => reg.add({ action: 'error_5xx', status: 404 })).toThrow(ZodError);
    expect(() => reg.add({ action: 'delay', probability: 2 })).toThrow(ZodError);
    expect(() => reg.add({ action: 'delay', extra: true } as never)).toThrow(ZodError);
  });
});

describe('ruleMatches', () => {
  const rule = (r: object) => FaultRuleSchema.parse(r);

  it('matches account, endpoint and URL substring', () => {
    expect(ruleMatches(rule({ action: 'error_5xx', account: 'acme' }), ctx())).toBe(true);
    expect(ruleMatches(rule({ action: 'error_5xx', account: 'beta' }), ctx())).toBe(false);
    expect(ruleMatches(rule({ action: 'error_5xx', endpoint: 'status' }), ctx())).toBe(false);
    expect(ruleMatches(rule({ action: 'error_5xx', urlContains: '/page' }), ctx())).toBe(true);
    expect(ruleMatches(rule({ action: 'error_5xx', urlContains: '/nope' }), ctx())).toBe(false);
    // Without a known URL (e.g. list, or a missing job), a urlContains rule never matches.
    expect(
      ruleMatches(rule({ action: 'error_5xx', urlContains: '/page' }), { account: 'acme', endpoint: 'list' }),
    ).toBe(false);
  });

  it('only applies actions to the endpoints they make sense for', () => {
    expect(ruleMatches(rule({ action: 'not_found' }), ctx())).toBe(false);
    expect(ruleMatches(rule({ action: 'not_found' }), ctx({ endpoint: 'status' }))).toBe(true);
    expect(ruleMatches(rule({ action: 'cancel_pending' }), ctx({ endpoint: 'status' }))).toBe(false);
    expect(ruleMatches(rule({ action: 'cancel_pending' }), ctx({ endpoint: 'cancel' }))).toBe(true);
    expect(ruleMatches(rule({ action: 'hold' }), ctx({ endpoint: 'status' }))).toBe(false);
  });
});
