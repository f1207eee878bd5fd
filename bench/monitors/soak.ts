// Phases 4 and 5: the soak. Changes run for BENCH_SOAK_MS; measurement starts one interval in
// (the first changes flowing). With BENCH_KILL, at BENCH_KILL_AT of the soak the worker is
// SIGKILLed (its whole process group and its Chromium, as a crashed machine), started again
// after BENCH_KILL_DOWN_MS, and the simulator's poll counter, read every 200 ms, says when polling
// resumed and when the poll rate was back to 90% of targets/interval. The steady figures are
// taken before the kill and after the recovery (plus a settling interval), each a window.
import { shardPollerId } from '../../src/monitors/shards.ts';
import type { BenchConfig } from './config.ts';
import { ChangeDriver } from './changes.ts';
import type { Lifecycle } from './lifecycle.ts';
import type { Target } from './load.ts';
import { between, percent, type Reading, type Window } from './meter.ts';
import type { Stack } from './stack.ts';
import { progress, sleep } from './support.ts';

const PROGRESS_MS = 10_000;
const RESUME_POLL_MS = 200;

export interface KillResult {
  /** Date.now() of each step. */
  killedAt: number;
  /** When the first of the killed worker's shard loops became due to another worker (its last heartbeat + the heartbeat timeout; null: not read). */
  handOverAt: number | null;
  spawnedAt: number;
  readyAt: number;
  /** The first page served after the new worker started (null: none before the soak ended). */
  firstPollAt: number | null;
  /** When the polls over the last interval reached 90% of targets/interval again. */
  recoveredAt: number | null;
  /** The outage's window: from the kill until the steady window after the recovery begins. */
  window: Window | null;
}

export interface SoakResult {
  driver: ChangeDriver;
  startedAt: number;
  endedAt: number;
  /** Steady windows: before the kill, after the recovery (absent when too short or not reached). */
  before: Window | null;
  after: Window | null;
  kill: KillResult | null;
  /** Highest notifications id before the soak began: the integrity check reads after it. */
  logHeadAtStart: number;
}

/** The shard poller's heartbeat timeout (workflows/shard-poller.ts). */
const POLL_HEARTBEAT_TIMEOUT_S = 15;

/**
 * The earliest instant one of the platform's shard loops times out if its worker dies now: the
 * oldest last heartbeat among their pending pollShard activities, plus the heartbeat timeout.
 */
async function earliestHandOver(stack: Stack, platform: string): Promise<number | null> {
  try {
    const beats: number[] = [];
    for (let shard = 0; shard < stack.shards; shard++) {
      const d = await stack.temporal.client.workflow.getHandle(shardPollerId(stack.config.MONITOR_TASK_QUEUE, platform, shard)).describe();
      if (d.status.name !== 'RUNNING') continue;
      for (const a of d.raw.pendingActivities ?? []) {
        const t = a.lastHeartbeatTime ?? a.lastStartedTime;
        if (t?.seconds != null) beats.push(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6));
      }
    }
    return beats.length ? Math.min(...beats) + POLL_HEARTBEAT_TIMEOUT_S * 1000 : null;
  } catch {
    return null;
  }
}

export async function soak(bench: BenchConfig, stack: Stack, targets: readonly Target[], life: Lifecycle): Promise<SoakResult> {
  const { meter, worker } = stack;
  const platform = stack.shape.platform;
  const driver = new ChangeDriver(bench, stack, targets);
  const logHeadAtStart = Number((await stack.pool.query<{ m: string | null }>('SELECT max(id) AS m FROM notifications')).rows[0]!.m ?? 0);
  const expectedRate = (targets.length * 1000) / bench.intervalMs;
  progress(
    `phase 4: soak of ${bench.soakMs / 1000} s: ${driver.perInterval} of ${targets.length} targets changed every ${bench.intervalMs} ms ` +
      `(a target again every ${driver.cycleIntervals.toFixed(1)} intervals)${bench.kill ? `; worker SIGKILL at ${Math.round(bench.killAt * 100)}%` : ''}`,
  );
  if (driver.cycleIntervals < 3) progress(`  note: targets change again within ${driver.cycleIntervals.toFixed(1)} intervals; some changes will be superseded before a poll sees them`);
  const startedAt = Date.now();
  const endsAt = startedAt + bench.soakMs;
  driver.start();
  life.onCleanup('change driver', () => driver.stop());

  // A progress line every 10 s: polls/s, notifications/s, CPU by process.
  let last: Reading | null = null;
  let ticking = false;
  let crashesShown = worker.crashes.length;
  const ticker = setInterval(() => {
    for (; crashesShown < worker.crashes.length; crashesShown++) progress(`  WORKER EXITED: ${worker.crashes[crashesShown]}`);
    if (ticking) return;
    ticking = true;
    void (async () => {
      const now = await meter.read(false);
      if (last && worker.running) {
        const w = between('progress', last, now);
        const lateness = w.metrics?.quantile('monitor_poll_lateness_seconds', 0.99, { platform });
        progress(
          `  ${((Date.now() - startedAt) / 1000).toFixed(0)} s: ${(w.polls / w.seconds).toFixed(1)} polls/s (of ${expectedRate.toFixed(1)}), ` +
            `${(w.notifications / w.seconds).toFixed(1)} notifications/s, ${driver.changes.length} changes, lateness p99 ≤ ${lateness ? `${lateness.atMost} s` : 'n/a'}; ` +
            `CPU % of a core: worker ${percent(w, 'worker').toFixed(0)}, Chromium ${percent(w, 'chromium').toFixed(0)}, Temporal ${percent(w, 'temporal').toFixed(0)}, PostgreSQL ${percent(w, 'postgres').toFixed(0)}, simulator ${percent(w, 'simulator').toFixed(0)}, bench ${percent(w, 'bench').toFixed(0)}`,
        );
      }
      last = now;
    })()
      .catch(() => {})
      .finally(() => {
        ticking = false;
      });
  }, PROGRESS_MS);

  const untilTime = async (at: number) => {
    while (Date.now() < at) {
      life.check();
      await sleep(Math.min(1_000, at - Date.now()));
    }
  };

  try {
    await untilTime(Math.min(endsAt, startedAt + bench.intervalMs));
    const a0 = await meter.read();
    let before: Window | null = null;
    let after: Window | null = null;
    let kill: KillResult | null = null;

    if (bench.kill) {
      await untilTime(startedAt + bench.killAt * bench.soakMs);
      const a1 = await meter.read();
      before = between('soak before the kill', a0, a1);
      // When Temporal will hand the killed worker's shard loops to the next worker: the heartbeat
      // timeout counted from the last heartbeat it received. The SDK sends heartbeats at most
      // every 0.8 × that timeout, so this falls anywhere from 0.2 × to 1 × the timeout after the
      // kill, by the kill's phase alone; polling cannot resume before it.
      const handOverAt = await earliestHandOver(stack, platform);
      progress(`phase 5: SIGKILL of the worker (pid ${worker.pid}), ${((Date.now() - startedAt) / 1000).toFixed(0)} s into the soak`);
      await worker.kill();
      const killedAt = Date.now();
      if (handOverAt !== null) progress(`  Temporal hands the first shard over ${((handOverAt - killedAt) / 1000).toFixed(1)} s after the kill (its last heartbeat + ${POLL_HEARTBEAT_TIMEOUT_S} s)`);
      await sleep(bench.killDownMs);
      // Every page from here on is the new worker's: the old one is dead.
      const hitsAtSpawn = await meter.simHits();
      const samples: [number, number][] = [[Date.now(), hitsAtSpawn]];
      let firstPollAt: number | null = null;
      let recoveredAt: number | null = null;
      let watching = true;
      const watch = (async () => {
        while (watching && Date.now() < endsAt) {
          await sleep(RESUME_POLL_MS);
          const t = Date.now();
          const hits = await meter.simHits().catch(() => null);
          if (hits === null) continue;
          samples.push([t, hits]);
          if (firstPollAt === null && hits > hitsAtSpawn) firstPollAt = t;
          const back = samples.find(([at]) => at >= t - bench.intervalMs);
          if (firstPollAt !== null && back && t - samples[0]![0] >= bench.intervalMs && (hits - back[1]) / ((t - back[0]) / 1000) >= 0.9 * expectedRate) {
            recoveredAt = t;
            return;
          }
        }
      })();
      progress(`  worker down for ${bench.killDownMs} ms; starting it again...`);
      const restarted = await worker.start();
      progress(`  new worker ready ${((restarted.readyAt - restarted.spawnedAt) / 1000).toFixed(1)} s after its start (pid ${worker.pid}); waiting for the polls to resume...`);
      while (recoveredAt === null && Date.now() < endsAt) {
        life.check();
        await sleep(250);
      }
      watching = false;
      await watch;
      const first = firstPollAt as number | null;
      const recovered = recoveredAt as number | null;
      progress(
        `  first poll ${first ? `${((first - restarted.spawnedAt) / 1000).toFixed(1)} s after the restart` : 'NOT seen'}; ` +
          `poll rate back to 90% ${recovered ? `${((recovered - restarted.spawnedAt) / 1000).toFixed(1)} s after the restart` : 'NOT within the soak'}`,
      );
      kill = { killedAt, handOverAt, spawnedAt: restarted.spawnedAt, readyAt: restarted.readyAt, firstPollAt: first, recoveredAt: recovered, window: null };
      // The steady window after the recovery starts once the backlog of late polls had an interval to clear.
      const b0At = Math.max(recovered ?? endsAt, (first ?? endsAt) + 2 * bench.intervalMs);
      if (b0At + bench.intervalMs < endsAt) {
        await untilTime(b0At);
        const b0 = await meter.read();
        kill.window = between('outage and recovery', a1, b0);
        await untilTime(endsAt);
        after = between('soak after the recovery', b0, await meter.read());
      } else {
        await untilTime(endsAt);
        kill.window = between('outage and recovery', a1, await meter.read());
      }
    } else {
      await untilTime(endsAt);
      before = between('soak', a0, await meter.read());
    }
    return { driver, startedAt, endedAt: Date.now(), before, after, kill, logHeadAtStart };
  } finally {
    clearInterval(ticker);
    await driver.stop();
  }
}

/** Sleeps through a measurement window, with a progress line every 10 s. */
export async function waitWindow(ms: number, life: Lifecycle): Promise<void> {
  const end = performance.now() + ms;
  let printed = performance.now();
  while (performance.now() < end) {
    life.check();
    await sleep(Math.min(1_000, end - performance.now()));
    if (performance.now() - printed >= 10_000 && performance.now() < end - 1_000) {
      printed = performance.now();
      progress(`  ${Math.round((ms - (end - printed)) / 1000)} s of ${ms / 1000}`);
    }
  }
}

/**
 * After the soak, before the notifications log is checked: BENCH_SETTLE_INTERVALS intervals, then
 * until no notification arrived for an interval (at most 10 more), so the last changes' polls and
 * notifications are in.
 */
export async function settleAfterSoak(bench: BenchConfig, stack: Stack): Promise<void> {
  await sleep(bench.settleIntervals * bench.intervalMs);
  let count = await stack.meter.notifications();
  for (let i = 0; i < 10; i++) {
    await sleep(bench.intervalMs);
    const now = await stack.meter.notifications();
    if (now === count) break;
    progress(`  still arriving: ${now - count} notifications in the last interval`);
    count = now;
  }
}
