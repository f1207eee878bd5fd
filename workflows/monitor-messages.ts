// The signals and queries between the monitor relay, the item monitors and the target pollers,
// defined once so senders (the relay, activities) and receivers (the workflows) agree.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { MonitorConfig } from '../src/monitors/changes.ts';

export interface ConfigureUpdate {
  config: MonitorConfig;
  /** The watchlist change id this config comes from: older or repeated updates are ignored. */
  version: number;
  deleted: boolean;
}

/** Relay → monitor: the item was created, updated or deleted. */
export const configureSignal = defineSignal<[ConfigureUpdate]>('configure');
/** Poller → monitor: the target has a new snapshot (the first one a monitor gets is its baseline). */
export const snapshotSignal = defineSignal<[{ snapshotId: number }]>('snapshot');
/** Monitor → poller (through an activity's signal-with-start): start sending me snapshots. */
export const subscribeSignal = defineSignal<[{ itemId: number; workflowId: string }]>('subscribe');
/** Monitor → poller: stop (the item was paused or deleted). */
export const unsubscribeSignal = defineSignal<[{ itemId: number }]>('unsubscribe');

export interface MonitorStatus {
  version: number;
  active: boolean;
  joined: boolean;
  baseline: number | null;
  evaluations: number;
}
export const monitorStatusQuery = defineQuery<MonitorStatus>('status');

export interface PollerStatus {
  subscribers: number[];
  lastSnapshotId: number | null;
  polls: number;
  lastError: string | null;
}
export const pollerStatusQuery = defineQuery<PollerStatus>('status');
