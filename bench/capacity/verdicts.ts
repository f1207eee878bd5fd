// bench:capacity's verdicts, apart from the run so a test can show each one failing
// (test/bench/capacity-verdicts.test.ts). The bench measures; its verdicts only say whether the
// measurement means anything: the first step (the lightest load) must be served (else the stack,
// not a part's capacity, is what the run found), and every step must count polls, statements and
// CPU (a step that counted nothing proves nothing), and every step that polls each target often
// enough must have notified the stock increases the synthetic schedule made (the ground truth,
// computed by the bench from the schedule). Which part saturates first is a finding, not a
// verdict: `firstShort` names the first step served below SERVED_SHARE of its demand.

/** A step whose polls/s reach this share of its demand is served. */
export const SERVED_SHARE = 0.95;

export interface StepFigures {
  intervalMs: number;
  /** Polls/s the targets ask for at this interval: targets × 1000 / interval. */
  demanded: number;
  /** Polls/s the worker made (its monitor_polls_total over the window). */
  polls: number;
  notifications: number;
  /** Stock increases/s the synthetic schedule made in the window (what notifies): the ground truth, computed by the bench. */
  scheduled: number;
  /** Each target's stock moves once per this many ms. */
  changePeriodMs: number;
  /** SQL statements/s the worker sent (db_statements_total). */
  statements: number;
  /** % of one core, by part. */
  cpu: Record<'worker' | 'temporal' | 'postgres' | 'bench', number>;
}

export function served(step: StepFigures): boolean {
  return step.demanded > 0 && step.polls >= SERVED_SHARE * step.demanded;
}

/** Every step counted polls, statements and the worker's CPU. */
export function countedSomething(steps: readonly StepFigures[]): boolean {
  return steps.length > 0 && steps.every((s) => s.polls > 0 && s.statements > 0 && s.cpu.worker > 0);
}

/** The first step was served: the run measured the parts, not a broken stack. */
export function firstServed(steps: readonly StepFigures[]): boolean {
  return steps.length > 0 && served(steps[0]!);
}

/** The first step served below SERVED_SHARE of its demand (null: every step was served). */
export function firstShort(steps: readonly StepFigures[]): StepFigures | null {
  return steps.find((s) => !served(s)) ?? null;
}

/**
 * A step notified what the schedule changed: notifications/s in the log within 20 % (and 5/s) of
 * the stock increases/s the bench computed from the schedule. Held to it: every step that polled
 * each target at least FRESH_POLLS times per change period, served or not (past saturation a
 * change is seen late, but still seen, and the rate written must match the rate made). A run
 * where no step is held, or whose schedule changed nothing, fails.
 */
export const NOTIFIED_TOLERANCE = 0.2;
export const FRESH_POLLS = 5;

/** The step polled each target often enough, against the changes, to be held to notifiedWhatChanged. */
export function heldToNotifications(step: StepFigures): boolean {
  const targets = (step.demanded * step.intervalMs) / 1000;
  return step.scheduled > 0 && targets > 0 && (step.polls * step.changePeriodMs) / 1000 >= FRESH_POLLS * targets;
}

export function notifiedWhatChanged(steps: readonly StepFigures[]): boolean {
  const held = steps.filter(heldToNotifications);
  return held.length > 0 && held.every((s) => Math.abs(s.notifications - s.scheduled) <= NOTIFIED_TOLERANCE * s.scheduled + 5);
}
