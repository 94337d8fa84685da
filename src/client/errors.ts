/**
 * Typed errors of the scrape client. The HTTP API maps each `code` to a status and a stable
 * problem `type`; the CLI prints `message`.
 */

/** Error codes: invalid input (400), not found (404), conflict (409), not ready (409/425), expired (410), a budget refused the job (402). */
export type ScrapeErrorCode = 'invalid' | 'not_found' | 'conflict' | 'not_ready' | 'expired' | 'budget_exceeded';

/** Base class of every client error. */
export class ScrapeError extends Error {
  constructor(
    readonly code: ScrapeErrorCode,
    message: string,
    /** Extra fields safe to show the caller (no secrets). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ScrapeError';
  }
}

/** The input failed validation; `details.issues` lists each problem. */
export class InvalidInputError extends ScrapeError {
  constructor(message: string, issues: unknown) {
    super('invalid', message, { issues });
    this.name = 'InvalidInputError';
  }
}

/** No such job for this account (another account's job answers the same). */
export class JobNotFoundError extends ScrapeError {
  constructor(jobId: string) {
    super('not_found', `no job ${jobId} for this account`);
    this.name = 'JobNotFoundError';
  }
}

/** The idempotency key was used before with different parameters. */
export class IdempotencyConflictError extends ScrapeError {
  constructor(jobId: string) {
    super(
      'conflict',
      `idempotency key already used for job ${jobId} with different parameters; use a new key or repeat the original request`,
      { jobId },
    );
    this.name = 'IdempotencyConflictError';
  }
}

/** The job has no result (yet, or ever): `details.state` says where it is. */
export class ResultNotReadyError extends ScrapeError {
  constructor(jobId: string, state: string) {
    super('not_ready', `job ${jobId} has no result: it is ${state}`, { jobId, state });
    this.name = 'ResultNotReadyError';
  }
}

/** The result was purged after its retention period; the job did run (`details` has the evidence). */
export class ResultExpiredError extends ScrapeError {
  constructor(jobId: string, evidence: Record<string, unknown>) {
    super('expired', `the result of job ${jobId} has expired and was purged; the job did run (see details)`, {
      jobId,
      ...evidence,
    });
    this.name = 'ResultExpiredError';
  }
}

/**
 * A budget of the account would go past its amount with this job's estimate, and the account's
 * policy is to refuse (docs/budgets.md): nothing was started or kept. `details` names the budget,
 * its period and what is left: `budget` (ID), `provider`, `unit`, `period`, `periodKey`, `amount`,
 * `reserved`, `spent`, `remaining`, `estimate`, `renewsAt` (UTC ISO-8601, null for `total`).
 */
export class BudgetExceededError extends ScrapeError {
  constructor(
    readonly refusal: {
      budget: string;
      provider: string;
      unit: string;
      period: string;
      periodKey: string;
      amount: number;
      reserved: number;
      spent: number;
      remaining: number;
      estimate: number;
      renewsAt: string | null;
    },
  ) {
    const r = refusal;
    super(
      'budget_exceeded',
      `refused by budget ${r.budget}: ${r.remaining} ${r.unit} left of ${r.amount} per ${r.period} (${r.periodKey}; ${r.reserved} reserved, ${r.spent} spent), and this job is estimated at ${r.estimate} ${r.unit}${r.renewsAt ? `; the period renews at ${r.renewsAt}` : ''}`,
      { ...r },
    );
    this.name = 'BudgetExceededError';
  }
}
