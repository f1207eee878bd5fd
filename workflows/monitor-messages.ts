// The signals and queries of the monitoring workflows, defined once so senders (the relay, the
// ops CLI, tests) and receivers (the workflows) agree.
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
/** Operator → monitor: read the item's last notification and baseline now (then query `status`). */
export const inspectSignal = defineSignal('inspect');

/** What the monitor last read about its item's polling (inspectSignal), and when. */
export interface Inspection {
  at: string;
  /** The snapshot the item's next change is measured from; null: no baseline yet (or not polled: paused). */
  baselineSnapshotId: number | null;
  lastNotification: { id: number; change_type: string; section: string; created_at: string } | null;
}

export interface MonitorStatus {
  /** The watchlist change id of the config in force. */
  version: number;
  state: 'active' | 'paused' | 'muted' | 'deleted';
  /** The target key (platform:region:event) and the shard poller that polls it. */
  target: string;
  poller: string;
  /** As of the last `inspect` signal (null before one): kept off the hot path, see docs/monitoring.md. */
  inspection: Inspection | null;
}
export const monitorStatusQuery = defineQuery<MonitorStatus>('status');

export interface ShardRunSummary {
  /** Targets polled at the end of the run. */
  targets: number;
  polls: number;
  changes: number;
  notifications: number;
  /** Targets the platform was refusing (429/403) at the end of the run. */
  blocked: number;
  endedAt: string;
}

export interface ShardPollerStatus {
  platform: string;
  shard: number;
  /** Poll activity runs completed by this workflow chain. */
  runs: number;
  lastRun: ShardRunSummary | null;
}
export const shardStatusQuery = defineQuery<ShardPollerStatus>('status');
