// bench:proxies' knobs, from the environment like bench:monitors' (whose knobs it shares, with
// issue 27's defaults: 1,000 items on 1,000 pf_03 targets, a 5 s interval), and the command
// line its report prints.
import { benchCommandLine, benchConfig, type BenchConfig } from '../monitors/config.ts';
import { envNumber } from '../monitors/support.ts';
import type { BanAnswer } from './simulator.ts';

const BAN_ANSWERS: readonly BanAnswer[] = ['forbidden', 'too_many', 'challenge'];

export interface ProxiesBenchConfig {
  /** The stack's and the load's knobs (bench:monitors'): items, targets, interval, quiet window, soak, changes. */
  bench: BenchConfig;
  /** Loopback proxies (BENCH_PROXIES). */
  proxies: number;
  /** SCRAPE_RPS_PER_PROXY for pf_03 in the proxied phases (BENCH_PROXY_RPS). */
  proxyRps: number;
  /** SCRAPE_RPS_PER_PLATFORM for pf_03 in the direct phase (BENCH_RPS): above what the targets need. */
  directRps: number;
  /** The simulator's pf_03 limit per address in the proxied phases (BENCH_SIM_LIMIT_PER_MIN). */
  limitPerMin: number;
  /** How long its bans, and the bench's own, last (BENCH_SIM_BAN_MS). */
  banMs: number;
  /** What a banned address is answered (BENCH_SIM_BAN_ANSWER: challenge, the default; forbidden; too_many). */
  banAnswer: BanAnswer;
  /** Proxies banned at once during the soak (BENCH_BANNED). */
  banned: number;
  /** Proxies left healthy in the last phase (BENCH_FEW_HEALTHY). */
  fewHealthy: number;
  /** When the bans come, after the soak's start (BENCH_BAN_AFTER_MS). */
  banAfterMs: number;
  /** The last phase: time for the rates to settle after its bans, then its window (BENCH_FEW_SETTLE_MS, BENCH_FEW_MS). */
  fewSettleMs: number;
  fewMs: number;
}

export function proxiesBenchConfig(): ProxiesBenchConfig {
  const base = benchConfig({ items: 1_000, targets: 1_000, quietMs: 60_000, soakMs: 150_000, proxies: 60 });
  if (base.platform !== 'pf_03') throw new Error(`bench:proxies drives pf_03 (plain HTTP, whose requests all go through the proxies); BENCH_PLATFORM=${base.platform} is not supported`);
  const needed = (base.targets * 1000) / base.intervalMs;
  const proxies = base.proxies;
  if (proxies < 2) throw new Error(`BENCH_PROXIES must be at least 2 (some are banned, some stay), got ${proxies}`);
  const banned = Math.round(envNumber('BENCH_BANNED', 10));
  const fewHealthy = Math.round(envNumber('BENCH_FEW_HEALTHY', 20));
  if (banned < 1 || banned >= proxies) throw new Error(`BENCH_BANNED must be 1..${proxies - 1} (BENCH_PROXIES - 1), got ${banned}`);
  if (fewHealthy < 1 || fewHealthy > proxies - banned) throw new Error(`BENCH_FEW_HEALTHY must be 1..${proxies - banned} (what the first bans leave), got ${fewHealthy}`);
  const banAnswer = (process.env.BENCH_SIM_BAN_ANSWER?.trim() || 'challenge') as BanAnswer;
  if (!BAN_ANSWERS.includes(banAnswer)) throw new Error(`BENCH_SIM_BAN_ANSWER must be one of ${BAN_ANSWERS.join(', ')}, got ${banAnswer}`);
  const soakMs = base.soakMs;
  const banAfterMs = envNumber('BENCH_BAN_AFTER_MS', Math.min(45_000, soakMs / 3));
  if (banAfterMs < base.intervalMs || banAfterMs > soakMs - 2 * base.intervalMs) {
    throw new Error(`BENCH_BAN_AFTER_MS must leave an interval of soak before the bans and two after (${base.intervalMs}..${soakMs - 2 * base.intervalMs}), got ${banAfterMs}`);
  }
  const directRps = envNumber('BENCH_RPS', Math.max(250, Math.ceil(1.25 * needed)));
  return {
    // No kill (bench:monitors measures that), no POST samples, no idle window: they are not issue 27's.
    bench: { ...base, kill: false, postSamples: 0, idleMs: 0, rps: directRps },
    proxies,
    proxyRps: envNumber('BENCH_PROXY_RPS', 4.5),
    directRps,
    limitPerMin: Math.max(1, Math.round(envNumber('BENCH_SIM_LIMIT_PER_MIN', 300))),
    banMs: Math.max(1, Math.round(envNumber('BENCH_SIM_BAN_MS', 600_000))),
    banAnswer,
    banned,
    fewHealthy,
    banAfterMs,
    fewSettleMs: envNumber('BENCH_FEW_SETTLE_MS', 20_000),
    fewMs: Math.max(2 * base.intervalMs, envNumber('BENCH_FEW_MS', 120_000)),
  };
}

/** Requests per second the targets need: one poll each per interval. */
export function neededRps(c: ProxiesBenchConfig): number {
  return (c.bench.targets * 1000) / c.bench.intervalMs;
}

/** The command as run: the knobs given in the environment (DATABASE_URL without its password). */
export function proxiesCommandLine(): string {
  return benchCommandLine('bench:proxies', process.env, ['MONITOR_SHARDS_PER_PLATFORM', 'SCRAPE_PROXY_COOLDOWN_MS', 'SCRAPE_SESSION_MAX_REQUESTS', 'SCRAPE_SESSION_MAX_AGE_MS']);
}
