// bench:alerts' knobs, all from the environment (bench/alerts.ts lists them), and the stack
// settings they make: a short poll interval so the scripts finish in minutes, a short scrape
// limit so a hanging page fails within seconds, and the bench:monitors stack's own config shape.
import type { PlatformKey } from '../../src/platform/registry.ts';
import { benchCommandLine, stackOnlyConfig, type BenchConfig } from '../monitors/config.ts';
import { envNumber } from '../monitors/support.ts';
import { parsePlatforms } from './platforms.ts';

export interface AlertsConfig {
  /** BENCH_PLATFORMS: which platforms (default all eleven). */
  platforms: PlatformKey[];
  /** BENCH_INTERVAL_MS: the worker's MONITOR_INTERVAL_MS (default 1000). */
  intervalMs: number;
  /** BENCH_COOLDOWN_S: the cooldown scenario's cooldown_seconds (default 10 intervals). */
  cooldownS: number;
  /** BENCH_KILL_COOLDOWN_S: the cooldown that spans the worker's SIGKILL (default 120 intervals: it must outlast phase 1 and the restart). */
  killCooldownS: number;
  /** BENCH_RETIRE_AFTER_MS: the worker's MONITOR_RETIRE_AFTER_MS (default 8 intervals); the incident's 404s last three times this. */
  retireMs: number;
  /** BENCH_KILL=0: no worker SIGKILL between the phases. */
  kill: boolean;
  /** BENCH_KILL_DOWN_MS: how long the worker stays dead (default 2000). */
  killDownMs: number;
  /** BENCH_STEP_TIMEOUT_MS: longest wait for a step to be seen by a poll (default 30000). */
  stepTimeoutMs: number;
  /** BENCH_SCRAPE_TIMEOUT_MS: the worker's SCRAPE_TIMEOUT_MS; a poll attempt gets a third (default 9000). */
  scrapeTimeoutMs: number;
  /** BENCH_BASELINE_TIMEOUT_MS: longest wait for every item's first poll (default 120000). */
  baselineTimeoutMs: number;
}

export function alertsConfig(): AlertsConfig {
  const intervalMs = Math.max(200, envNumber('BENCH_INTERVAL_MS', 1_000));
  const cooldownS = Math.round(envNumber('BENCH_COOLDOWN_S', Math.max(1, Math.round((10 * intervalMs) / 1000))));
  if (cooldownS < 1 || cooldownS > 86_400) throw new Error(`BENCH_COOLDOWN_S must be 1..86400, got ${cooldownS}`);
  if (cooldownS * 1000 < 8 * intervalMs) throw new Error(`BENCH_COOLDOWN_S (${cooldownS}) must be at least 8 intervals (${(8 * intervalMs) / 1000} s): two held changes are made within it`);
  const killCooldownS = Math.round(envNumber('BENCH_KILL_COOLDOWN_S', Math.round((120 * intervalMs) / 1000)));
  // Its release comes after the cooldown scenario's last phase-1 step (2 cooldowns and 14 intervals in).
  if (killCooldownS * 1000 <= 2 * cooldownS * 1000 + 14 * intervalMs || killCooldownS > 86_400) {
    throw new Error(`BENCH_KILL_COOLDOWN_S (${killCooldownS}) must end after the cooldown scenario's phase 1 (over ${(2 * cooldownS * 1000 + 14 * intervalMs) / 1000} s) and be at most 86400`);
  }
  const retireMs = Math.round(envNumber('BENCH_RETIRE_AFTER_MS', 8 * intervalMs));
  if (retireMs < 1_000) throw new Error(`BENCH_RETIRE_AFTER_MS must be at least 1000 (the service's minimum), got ${retireMs}`);
  return {
    platforms: parsePlatforms(process.env.BENCH_PLATFORMS),
    intervalMs,
    cooldownS,
    killCooldownS,
    retireMs,
    kill: process.env.BENCH_KILL !== '0',
    killDownMs: envNumber('BENCH_KILL_DOWN_MS', 2_000),
    stepTimeoutMs: Math.max(5_000, envNumber('BENCH_STEP_TIMEOUT_MS', 30_000)),
    scrapeTimeoutMs: Math.max(3_000, envNumber('BENCH_SCRAPE_TIMEOUT_MS', 9_000)),
    baselineTimeoutMs: envNumber('BENCH_BASELINE_TIMEOUT_MS', 120_000),
  };
}

/** The bench:monitors stack's config for this run: only the fields startStack reads matter. */
export function stackConfig(c: AlertsConfig): BenchConfig {
  return stackOnlyConfig({
    intervalMs: c.intervalMs,
    kill: c.kill,
    // Every platform behind its wall, as `npm start` runs the simulator (BENCH_WALLS=off: none).
    walls: process.env.BENCH_WALLS !== 'off',
    killDownMs: c.killDownMs,
    streamAccounts: 1,
    baselineTimeoutMs: c.baselineTimeoutMs,
    settleIntervals: 3,
  });
}

/** The command as run: the knobs given in the environment (DATABASE_URL without its password). */
export function alertsCommandLine(): string {
  return benchCommandLine('bench:alerts', process.env, ['MONITOR_SHARDS_PER_PLATFORM', 'CHROMIUM_PATH']);
}
