/**
 * Typed errors of the scrape client. The HTTP API maps each `code` to a status and a stable
 * problem `type`; the CLI prints `message`.
 */

/** Error codes: invalid input (400), not found (404), conflict (409), not ready (409/425), expired (410). */
export type ScrapeErrorCode = 'invalid' | 'not_found' | 'conflict' | 'not_ready' | 'expired';

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
