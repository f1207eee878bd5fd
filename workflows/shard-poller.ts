// shardPoller: the lifecycle of one shard of watched targets (one platform, one hash shard;
// src/monitors/shards.ts). It only starts the long-running pollShard activity, restarts it when
// it fails (a worker died: after the heartbeat timeout another worker takes the loop over, from
// the schedule in its last heartbeat), and continues as new after each run with the schedule
// the run handed back. The polling itself, with its scrapes, comparisons and writes, happens
// inside the activity (Temporal's "frequent polling" pattern): no timer, workflow task or
// activity round trip per poll. The shard's members are rows in monitor_members, written by
// the membership relay; the chain ends when the shard has none left, and the relay starts it
// again when one arrives.
import { continueAsNew, proxyActivities, setHandler } from '@temporalio/workflow';
import type { PollActivities } from '../activities/poll-shard.ts';
import { shardStatusQuery, type ShardRunSummary } from './monitor-messages.ts';

export interface ShardPollerInput {
  platform: string;
  shard: number;
  /** Runs completed by earlier workflows of this chain. */
  runs: number;
  lastRun: ShardRunSummary | null;
  /** Target key → next due time (epoch ms) from the last run, so a new run keeps the rhythm. */
  due: Record<string, number> | null;
}

export async function shardPoller(input: ShardPollerInput): Promise<void> {
  setHandler(shardStatusQuery, () => ({ platform: input.platform, shard: input.shard, runs: input.runs, lastRun: input.lastRun }));
  const { pollShard } = proxyActivities<PollActivities>({
    // A run ends by itself after MONITOR_POLL_RUN_MS (at most 30 min, config.ts); this bound is
    // only for a run that stopped heartbeating without being noticed.
    startToCloseTimeout: '1 hour',
    // How soon a dead worker's loop is taken over by another worker.
    heartbeatTimeout: '15 seconds',
    // Never give up: a shard that stopped polling would silently stop notifying. Each heartbeat
    // timeout (a worker killed, frozen or cut off) is an attempt, and attempts count up for the
    // run's whole 10 minutes: at a 30 s cap the rehearsal's seventh fault waited 30 s for its
    // retry after Temporal was back. At 5 s a shard is polled again within seconds of any return.
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 seconds' },
  });
  const result = await pollShard({ platform: input.platform, shard: input.shard, due: input.due });
  if (result.idle) return;
  await continueAsNew<typeof shardPoller>({ ...input, runs: input.runs + 1, lastRun: result.summary, due: result.due });
}
