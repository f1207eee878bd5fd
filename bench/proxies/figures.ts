// What bench:proxies computes from the simulator's request log (simulator.ts): the most requests
// any address sent in a 60 s window (the simulator's limit counts the same way: a request at t
// counts those admitted in (t - 60 s, t]), requests and refusals per address, how long the
// targets of banned addresses waited for a poll through a healthy one, and how evenly the polls
// are spread over the targets when the budget runs short. Pure functions of the log.
import { percentile } from '../support/percentiles.ts';
import type { LoggedRequest } from './simulator.ts';

const WINDOW_MS = 60_000;

export interface Spread {
  n: number;
  min: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
  /** Standard deviation over the mean (NaN with no values). */
  cv: number;
}

export function spread(values: readonly number[]): Spread {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  const mean = n ? s.reduce((a, b) => a + b, 0) / n : NaN;
  const sd = n ? Math.sqrt(s.reduce((a, v) => a + (v - mean) ** 2, 0) / n) : NaN;
  return { n, min: s[0] ?? NaN, p50: percentile(s, 50), p99: percentile(s, 99), max: s.at(-1) ?? NaN, mean, cv: sd / mean };
}

export interface AddressPeak {
  address: string;
  /** The most admitted requests in any 60 s ending in [from, to). */
  peak: number;
  /** When that window ended. */
  at: number;
}

/**
 * Per address, the most admitted requests in any (t - 60 s, t] for t in [from, to): `requests`
 * must hold the admitted ones from `from` - 60 s on, in arrival order. Highest first; addresses
 * with none in [from, to) are left out.
 */
export function peaksPer60s(requests: readonly LoggedRequest[], from: number, to: number): AddressPeak[] {
  const times = new Map<string, number[]>();
  for (const r of requests) {
    if (r.refused || r.at >= to) continue;
    let list = times.get(r.address);
    if (!list) times.set(r.address, (list = []));
    list.push(r.at);
  }
  const out: AddressPeak[] = [];
  for (const [address, ts] of times) {
    let best = { peak: 0, at: NaN };
    let start = 0;
    for (let j = 0; j < ts.length; j++) {
      while (ts[start]! <= ts[j]! - WINDOW_MS) start++;
      if (ts[j]! >= from && j - start + 1 > best.peak) best = { peak: j - start + 1, at: ts[j]! };
    }
    if (best.peak > 0) out.push({ address, ...best });
  }
  return out.sort((a, b) => b.peak - a.peak);
}

export interface AddressCounts {
  admitted: number;
  refused: number;
}

export function perAddress(requests: readonly LoggedRequest[]): Map<string, AddressCounts> {
  const out = new Map<string, AddressCounts>();
  for (const r of requests) {
    const c = out.get(r.address) ?? { admitted: 0, refused: 0 };
    if (r.refused) c.refused++;
    else c.admitted++;
    out.set(r.address, c);
  }
  return out;
}

export interface AcrossBan {
  key: string;
  /** Its last poll before the ban, and whether its address was then banned. */
  lastBefore: number;
  viaBanned: boolean;
  /** Its first request refused after the ban (null: none; its next poll went elsewhere at once). */
  firstRefused: number | null;
  refused: number;
  /** Its first poll after the ban through an address not banned (null: none in `requests`). */
  nextGood: number | null;
}

/**
 * Every target polled before `banAt` and how it got its next poll through a healthy address
 * after it: those whose last poll went through one of `banned` are the ones the ban hit, the
 * others are the comparison (the same schedule, untouched). `requests`: from an interval or
 * more before the ban on.
 */
export function acrossBan(requests: readonly LoggedRequest[], banned: ReadonlySet<string>, banAt: number): AcrossBan[] {
  const out = new Map<string, AcrossBan>();
  for (const r of requests) {
    if (r.at < banAt) {
      if (!r.refused) out.set(r.key, { key: r.key, lastBefore: r.at, viaBanned: banned.has(r.address), firstRefused: null, refused: 0, nextGood: null });
      continue;
    }
    const t = out.get(r.key);
    if (!t || t.nextGood !== null) continue;
    if (r.refused) {
      t.refused++;
      t.firstRefused ??= r.at;
    } else if (!banned.has(r.address)) {
      t.nextGood = r.at;
    }
  }
  return [...out.values()];
}

/**
 * Every request in `requests` (in arrival order) refused before `until`, and how long its target
 * then waited for a poll through an address not in `banned`: the cost of a block to the target
 * (null: no such poll before the end of `requests`).
 */
export function waitsAfterRefusal(requests: readonly LoggedRequest[], banned: ReadonlySet<string>, until: number): (number | null)[] {
  const pending = new Map<string, number[]>();
  const out: (number | null)[] = [];
  for (const r of requests) {
    if (r.refused) {
      if (r.at >= until) continue;
      const list = pending.get(r.key) ?? [];
      list.push(r.at);
      pending.set(r.key, list);
    } else if (!banned.has(r.address)) {
      for (const at of pending.get(r.key) ?? []) out.push(r.at - at);
      pending.delete(r.key);
    }
  }
  for (const list of pending.values()) for (let i = 0; i < list.length; i++) out.push(null);
  return out;
}

export interface Evenness {
  targets: number;
  /** Polls per target in the window. */
  polls: Spread;
  /** Each target's mean time between its polls in the window, (last - first) / (polls - 1), in ms. */
  interval: Spread;
  /** Targets polled fewer than twice (no interval of their own). */
  underTwice: number;
}

/** Per key of `keys`: its polls in `requests` and its mean time between them, (last - first) / (polls - 1) (null: fewer than two). */
export function meanIntervals(requests: readonly LoggedRequest[], keys: readonly string[]): Map<string, { polls: number; interval: number | null }> {
  const times = new Map<string, number[]>(keys.map((k) => [k, []]));
  for (const r of requests) if (!r.refused) times.get(r.key)?.push(r.at);
  const out = new Map<string, { polls: number; interval: number | null }>();
  for (const [key, ts] of times) out.set(key, { polls: ts.length, interval: ts.length < 2 ? null : (ts.at(-1)! - ts[0]!) / (ts.length - 1) });
  return out;
}

/** How the window's polls spread over `keys`: the budget's shortfall shared alike, or not. */
export function evenness(requests: readonly LoggedRequest[], keys: readonly string[]): Evenness {
  const per = [...meanIntervals(requests, keys).values()];
  const intervals = per.flatMap((p) => (p.interval === null ? [] : [p.interval]));
  return { targets: keys.length, polls: spread(per.map((p) => p.polls)), interval: spread(intervals), underTwice: per.length - intervals.length };
}

export interface GroupIntervals {
  group: number;
  targets: number;
  interval: Spread;
}

/**
 * The targets' mean intervals grouped by a number each target is given (its shard; how many
 * targets its account has in its shard), lowest first: where an unevenness comes from.
 */
export function intervalsBy(requests: readonly LoggedRequest[], keys: readonly string[], groupOf: (key: string) => number | undefined): GroupIntervals[] {
  const groups = new Map<number, number[]>();
  for (const [key, p] of meanIntervals(requests, keys)) {
    const g = groupOf(key);
    if (g === undefined || p.interval === null) continue;
    const list = groups.get(g) ?? [];
    list.push(p.interval);
    groups.set(g, list);
  }
  return [...groups.entries()].sort((a, b) => a[0] - b[0]).map(([group, list]) => ({ group, targets: list.length, interval: spread(list) }));
}
