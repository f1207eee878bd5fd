// How the event tracker's workflow (trackEvent) paces its rounds: how a failed activity is
// described, and how long to wait before the next round. Workflow code: Math.random
// here is the SDK's deterministic one, so a replay waits exactly as the original run did.
import { ApplicationFailure, type ActivityFailure } from '@temporalio/workflow';

/** A wait is stretched by 2^failures, up to this factor (a failing target is not hammered). */
export const MAX_BACKOFF_FACTOR = 16;

/** The activity failure's type (an ApplicationFailure's, else null) and message. */
export function describeActivityFailure(err: ActivityFailure): { type: string | null; message: string } {
  const cause = err.cause;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? null, message: cause.message };
  return { type: null, message: cause?.message ?? err.message };
}

/** `type: message`, or the message alone when the failure has no type. */
export function failureText({ type, message }: { type: string | null; message: string }): string {
  return type ? `${type}: ${message}` : message;
}

/**
 * The wait before the next round: intervalMs × 2^failures (at most MAX_BACKOFF_FACTOR) ×
 * (1 ± jitterRatio), so workflows started together spread out.
 */
export function backoffWait(intervalMs: number, failures: number, jitterRatio: number): number {
  const backoff = Math.min(MAX_BACKOFF_FACTOR, 2 ** failures);
  return Math.round(intervalMs * backoff * (1 + jitterRatio * (2 * Math.random() - 1)));
}

/**
 * How often a paused tracking (no account tracking it is served) checks again by itself. It is
 * woken sooner, by the resumeTracking signal, when one of its accounts is served again (the
 * service signal relay, src/market-data/tracking-lifecycle.ts): this is only the backstop for a
 * signal that was lost, so a paused tracking costs one activity every quarter of an hour.
 */
export const PAUSED_CHECK_MS = 15 * 60_000;

/** The backstop wait of a paused tracking: max(interval, PAUSED_CHECK_MS) × (1 ± jitterRatio). */
export function pausedWait(intervalMs: number, jitterRatio: number): number {
  return backoffWait(Math.max(intervalMs, PAUSED_CHECK_MS), 0, jitterRatio);
}
