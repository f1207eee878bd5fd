// The query and signal of a trackEvent workflow, defined once so the workflow and its callers
// (ops, tests, the service signal relay) agree.
import { defineQuery, defineSignal } from '@temporalio/workflow';

export interface TrackStatus {
  /** Ticks applied in this tracking's whole chain (continue-as-new included). */
  ticks: number;
  /** Ticks failed in a row since the last success (each stretches the wait). */
  failures: number;
  lastError: string | null;
  intervalMs: number;
  /** The last check found no account tracking the event served: nothing is scraped until one is. */
  paused?: boolean;
}

export const trackStatusQuery = defineQuery<TrackStatus>('trackStatus');

/** One of the tracking's accounts is served again: a paused tracking checks at once. */
export const resumeTrackingSignal = defineSignal('resumeTracking');
