// Issue 25's two-account run, shared by test/monitors/fairness.test.ts and `npm run
// bench:fairness`: account A watches BIG slow targets of one platform, account B a few fast ones
// on the same platform; after a warm-up, the simulator's own request log (ground truth, not the
// service's view of its polls) says how often each of B's targets was asked for over a window,
// and how many requests each account's targets received.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/connection.ts';
import { createAccount, createKey } from '../../src/accounts/operations.ts';
import { keyFigures, type SimRequest } from '../../src/simulator/request-log.ts';

export interface FairnessParts {
  /** The simulator's base URL (its control API is under /_sim). */
  simUrl: string;
  gatewayUrl: string;
  /** The service database, to create the two accounts. */
  db: Db;
}

export interface FairnessOptions {
  /** pf_06 by default: a paged JSON API, one request per poll for a small event. */
  platform?: 'pf_06';
  bigTargets?: number;
  smallTargets?: number;
  /** How long each of A's targets takes to answer (the simulator's `slow`). */
  slowMs?: number;
  /** Before the window: lets every poller start and A's backlog build up. */
  warmupMs?: number;
  windowMs?: number;
  /** A's first this many targets are figured apart (`marked`)... */
  markedTargets?: number;
  /** ...and A's items on them are created with this priority (0, the default, marks nothing). */
  markedPriority?: number;
  /** Where progress lines go (the bench prints them; the test does not). */
  progress?: (line: string) => void;
}

export interface FairnessFigures {
  windowS: number;
  small: {
    targets: number;
    /** The longest gap between two requests for any of B's targets (window edges included), ms. */
    maxGapMs: number;
    /** Per target, in order. */
    gapsMs: number[];
    requestsPerS: number;
  };
  big: {
    targets: number;
    requestsPerS: number;
    /** Distinct A targets asked for in the window. */
    targetsAsked: number;
  };
  /** A's first `markedTargets` targets (among `big`'s), created with `markedPriority`. */
  marked: {
    targets: number;
    priority: number;
    /** The longest gap between two requests for any of them (window edges included), ms. */
    maxGapMs: number;
    requestsPerS: number;
  };
}

const REGION = 'us';

/** A pf_06 bare event id: 8 letters or digits. */
function eventIds(n: number, prefix: string): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i.toString(36).padStart(4, '0')}`);
}

async function putEvent(simUrl: string, platform: string, id: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${simUrl}/_sim/${platform}/events/${encodeURIComponent(id)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ region: REGION, sections: [{ name: 'Floor', price: 80, stock: 4 }], ...body }),
  });
  if (res.status !== 200) throw new Error(`simulator PUT ${platform}/${id}: ${res.status} ${await res.text()}`);
}

async function watch(gatewayUrl: string, key: string, platform: string, event: string, priority = 0): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(`${gatewayUrl}/watchlist`, {
      method: 'POST',
      headers: { apikey: key, 'content-type': 'application/json' },
      body: JSON.stringify({ website: platform, event, region: REGION, priority }),
    }).catch((err: unknown) => (attempt < 3 ? null : Promise.reject(err)));
    if (res?.status === 201) return;
    if (res && attempt >= 3) throw new Error(`POST /watchlist ${event}: ${res.status} ${await res.text()}`);
  }
}

async function inParallel<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function account(db: Db, name: string): Promise<string> {
  const { account_id } = await createAccount(db, { plan: 'pro', name });
  return (await createKey(db, { accountId: account_id, rateLimitPerMinute: 1_000_000 })).key;
}

/** The requests the simulator received for `platform` since `since` (epoch ms). */
export async function simRequests(simUrl: string, platform: string, since: number): Promise<SimRequest[]> {
  const res = await fetch(`${simUrl}/_sim/requests?since=${since}&platform=${platform}`);
  if (res.status !== 200) throw new Error(`simulator GET /_sim/requests: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { requests: SimRequest[] }).requests;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runFairness(parts: FairnessParts, opts: FairnessOptions = {}): Promise<FairnessFigures> {
  const platform = opts.platform ?? 'pf_06';
  const say = opts.progress ?? (() => {});
  const run = randomBytes(3).toString('hex').slice(0, 4);
  const bigIds = eventIds(opts.bigTargets ?? 400, `a${run.slice(0, 3)}`);
  const smallIds = eventIds(opts.smallTargets ?? 3, `b${run.slice(0, 3)}`);
  say(`putting ${bigIds.length} slow (${opts.slowMs ?? 2_000} ms) and ${smallIds.length} fast ${platform} events on the simulator...`);
  await inParallel(bigIds, 32, (id) => putEvent(parts.simUrl, platform, id, { behaviour: 'slow', delay_ms: opts.slowMs ?? 2_000 }));
  await inParallel(smallIds, 4, (id) => putEvent(parts.simUrl, platform, id, {}));
  const [bigKey, smallKey] = [await account(parts.db, `fairness-big-${run}`), await account(parts.db, `fairness-small-${run}`)];
  say(`creating the items: account A watches ${bigIds.length}, account B ${smallIds.length}...`);
  const markedIds = bigIds.slice(0, opts.markedTargets ?? 0);
  const markedPriority = opts.markedPriority ?? 0;
  if (markedIds.length > 0 && markedPriority !== 0) say(`${markedIds.length} of A's items with priority ${markedPriority}, the rest 0`);
  const marked = new Set(markedIds);
  await inParallel(bigIds, 24, (id) => watch(parts.gatewayUrl, bigKey, platform, id, marked.has(id) ? markedPriority : 0));
  await Promise.all(smallIds.map((id) => watch(parts.gatewayUrl, smallKey, platform, id)));
  const warmupMs = opts.warmupMs ?? 4_000;
  say(`warm-up ${warmupMs / 1000} s, then a ${(opts.windowMs ?? 20_000) / 1000} s window read from the simulator's request log...`);
  await sleep(warmupMs);
  const from = Date.now();
  await sleep(opts.windowMs ?? 20_000);
  const to = Date.now();
  const requests = await simRequests(parts.simUrl, platform, from);
  const windowS = (to - from) / 1000;
  const small = keyFigures(requests, smallIds, from, to);
  const big = keyFigures(requests, bigIds, from, to);
  const count = (m: Map<string, { requests: number }>) => [...m.values()].reduce((n, f) => n + f.requests, 0);
  const gapsMs = smallIds.map((id) => small.get(id)!.maxGapMs);
  const markedFigures = keyFigures(requests, markedIds, from, to);
  return {
    windowS,
    small: { targets: smallIds.length, maxGapMs: Math.max(...gapsMs), gapsMs, requestsPerS: count(small) / windowS },
    big: { targets: bigIds.length, requestsPerS: count(big) / windowS, targetsAsked: [...big.values()].filter((f) => f.requests > 0).length },
    marked: {
      targets: markedIds.length,
      priority: markedPriority,
      maxGapMs: Math.max(0, ...markedIds.map((id) => markedFigures.get(id)!.maxGapMs)),
      requestsPerS: count(markedFigures) / windowS,
    },
  };
}
