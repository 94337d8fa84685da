/**
 * Reading activity failures in workflow code: the sanitised {@link JobError} an activity attached,
 * and whether a failure proves the provider created nothing. Deterministic, no I/O.
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import type { JobError } from '../../model/types.js';

function causeOf(e: unknown): unknown {
  return e instanceof ActivityFailure ? e.cause : e;
}

/**
 * True when a submit failure proves the provider created nothing: an application failure our
 * activity raised after a definite answer (permanent rejection, or cool-downs/transient refusals
 * until the budget ran out; the activity cleared its intent). Timeouts and other failures are ambiguous.
 */
export function isDefiniteRejection(e: unknown): boolean {
  const cause = causeOf(e);
  return (
    cause instanceof ApplicationFailure &&
    typeof cause.type === 'string' &&
    cause.type.startsWith('Provider.') &&
    cause.type !== 'Provider.ambiguous'
  );
}

/** True when the activity ran out of time (its schedule-to-close backstop). */
export function isTimeout(e: unknown): boolean {
  return causeOf(e) instanceof TimeoutFailure;
}

/** The sanitised JobError an activity attached to its failure, or one built from the failure. */
export function jobErrorOf(e: unknown, fallback: string): JobError {
  const cause = causeOf(e);
  if (cause instanceof ApplicationFailure) {
    const d = cause.details?.[0] as JobError | undefined;
    if (d && typeof d === 'object' && 'message' in d) return d;
    return { kind: cause.type ?? 'internal', message: cause.message, at: new Date().toISOString() };
  }
  const msg =
    e instanceof Error ? `${e.message}${cause instanceof Error && cause !== e ? `: ${cause.message}` : ''}` : String(e);
  return { kind: 'internal', message: `${fallback}: ${msg}`, at: new Date().toISOString() };
}
