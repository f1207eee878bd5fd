// Phases 1 and 2: the targets on the simulator, the accounts, the items created through
// POST /watchlist (their latency overall and for the last 10%, when the table is fullest), and
// the time from the last create until every item has its baseline
// (monitor_members.baseline_snapshot_id set by the item's first poll).
import { createAccount, createKey } from '../../src/accounts/operations.ts';
import { percentile, summarise } from '../support/percentiles.ts';
import type { BenchConfig } from './config.ts';
import type { Lifecycle } from './lifecycle.ts';
import { between, percent, type Window } from './meter.ts';
import type { PlatformShape, Section } from './platform.ts';
import type { Stack } from './stack.ts';
import { fmtMs, inParallel, progress, sleep } from './support.ts';

export type { Section } from './platform.ts';

const PROGRESS_MS = 10_000;

export interface Target {
  index: number;
  /** The client event id (what items watch: a URL on pf_03, a bare id on pf_01). */
  eventId: string;
  /** The simulator's event key. */
  key: string;
  sections: Section[];
  /** Live items on it, with their accounts. */
  items: { id: number; account: number }[];
  /** Changes made to it so far (each raises the next standard section's stock). */
  changes: number;
}

export interface Account {
  id: number;
  key: string;
}

/** The body of POST /watchlist for an item on the target: a default item (standard tickets, stock_increase). */
export function itemBody(shape: PlatformShape, t: Target): string {
  return JSON.stringify({ website: shape.platform, event: t.eventId, region: shape.region });
}

/** Sets a target's inventory on the simulator; returns the requests it had served before this PUT. */
export async function simPut(stack: Stack, t: Target): Promise<number> {
  const { shape } = stack;
  const res = await fetch(`${stack.sim.url}/_sim/${shape.platform}/events/${encodeURIComponent(t.key)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ region: shape.region, sections: t.sections, ...(shape.currency ? { currency: shape.currency } : {}) }),
  });
  if (res.status !== 200) throw new Error(`simulator PUT ${shape.platform} ${t.key}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { hits: number }).hits;
}

export async function setUp(bench: BenchConfig, stack: Stack): Promise<{ targets: Target[]; accounts: Account[] }> {
  const { shape } = stack;
  progress(`putting ${bench.targets} ${shape.platform} events (region ${shape.region}) on the simulator and creating ${bench.accounts} accounts...`);
  const targets: Target[] = Array.from({ length: bench.targets }, (_, i) => {
    const { eventId, key } = shape.event(i);
    return { index: i, eventId, key, sections: shape.sections(i), items: [], changes: 0 };
  });
  await inParallel(targets, bench.concurrency, async (t) => {
    await simPut(stack, t);
  });
  const accounts: Account[] = [];
  for (let a = 0; a < bench.accounts; a++) {
    const { account_id } = await createAccount(stack.db, { plan: 'pro', name: `bench-monitors-${a}` });
    const { key } = await createKey(stack.db, { accountId: account_id, rateLimitPerMinute: 1_000_000 });
    accounts.push({ id: account_id, key });
  }
  return { targets, accounts };
}

export interface CreateResult {
  created: number;
  failures: number;
  /** POST latencies in ms, by item index (NaN: no answer). */
  latencies: number[];
  seconds: number;
  /** Date.now() when the last POST answered. */
  lastCreateAt: number;
}

export async function createItems(bench: BenchConfig, stack: Stack, targets: Target[], accounts: Account[], life: Lifecycle): Promise<CreateResult> {
  progress(`phase 1: creating ${bench.items} watchlist items through POST /watchlist, ${bench.concurrency} concurrent, ${bench.createOrder === 'account' ? "each account's one after another" : 'interleaved across accounts'}...`);
  const latencies = new Array<number>(bench.items).fill(NaN);
  let created = 0;
  let failures = 0;
  let done = 0;
  // Item i is target i's (round the targets) and account (i + i/T)'s, whatever the order they are
  // created in: the order decides only which requests are in flight together.
  const accountOf = (i: number) => accounts[(i + Math.floor(i / targets.length)) % accounts.length]!;
  const order = Array.from({ length: bench.items }, (_, i) => i);
  if (bench.createOrder === 'account') {
    const rank = new Map(accounts.map((a, k) => [a, k]));
    order.sort((x, y) => rank.get(accountOf(x))! - rank.get(accountOf(y))! || x - y);
  }
  const started = performance.now();
  const ticker = setInterval(() => {
    const s = (performance.now() - started) / 1000;
    const recent = latencies.slice(Math.max(0, done - 500), done).filter(Number.isFinite);
    progress(`  ${s.toFixed(0)} s: ${created}/${bench.items} created (${(created / s).toFixed(0)}/s), recent POST p95 ${fmtMs(percentile([...recent].sort((a, b) => a - b), 95))}, ${failures} failures`);
  }, PROGRESS_MS);
  try {
    await inParallel(
      order,
      bench.concurrency,
      async (i) => {
        life.check();
        const target = targets[i % targets.length]!;
        // A target's items belong to different accounts (item i of target t: account t + i/T).
        const account = accountOf(i);
        const t0 = performance.now();
        let status = 0;
        let body: { id?: number } | string = '';
        try {
          const res = await fetch(`${stack.gatewayUrl}/watchlist`, {
            method: 'POST',
            headers: { apikey: account.key, 'content-type': 'application/json' },
            body: itemBody(stack.shape, target),
          });
          status = res.status;
          const text = await res.text();
          body = status === 201 ? (JSON.parse(text) as { id: number }) : text;
        } catch (err) {
          body = String(err);
        }
        latencies[done] = performance.now() - t0;
        done++;
        if (status === 201 && typeof body === 'object' && body.id) {
          target.items.push({ id: Number(body.id), account: account.id });
          created++;
        } else {
          failures++;
          if (failures <= 3 && !life.interrupted) progress(`  POST /watchlist failed: ${status || 'no answer'} ${String(typeof body === 'string' ? body : JSON.stringify(body)).slice(0, 200)}`);
        }
      },
    );
  } finally {
    clearInterval(ticker);
  }
  const seconds = (performance.now() - started) / 1000;
  const s = summarise(latencies.filter(Number.isFinite));
  progress(`  ${created} created in ${seconds.toFixed(1)} s (${(created / seconds).toFixed(0)}/s), ${failures} failures; POST p50 ${fmtMs(s.p50)}, p95 ${fmtMs(s.p95)}`);
  return { created, failures, latencies, seconds, lastCreateAt: Date.now() };
}

export interface PacedPosts {
  /** Items live when the samples ran. */
  items: number;
  /** POST latencies in ms (NaN: no answer or not 201), then the DELETE latencies. */
  post: number[];
  del: number[];
}

/**
 * A client's POST once every item exists: one request at a time, every 200 ms, on watched
 * targets, each item deleted again at once, so the soak's items and checks are untouched.
 * This is the latency "at N items"; the bulk creation above measures throughput, and its
 * latencies are mostly its own 16-deep queue.
 */
export async function pacedPosts(bench: BenchConfig, stack: Stack, targets: Target[], accounts: Account[], items: number, life: Lifecycle): Promise<PacedPosts> {
  progress(`POST /watchlist at ${items} items: ${bench.postSamples} requests one at a time, every 200 ms (each deleted again)...`);
  const post: number[] = [];
  const del: number[] = [];
  for (let i = 0; i < bench.postSamples; i++) {
    life.check();
    const target = targets[(i * 7) % targets.length]!;
    const account = accounts[i % accounts.length]!;
    const headers = { apikey: account.key, 'content-type': 'application/json' };
    let t0 = performance.now();
    const res = await fetch(`${stack.gatewayUrl}/watchlist`, { method: 'POST', headers, body: itemBody(stack.shape, target) });
    const body = (await res.json().catch(() => null)) as { id?: number } | null;
    post.push(res.status === 201 ? performance.now() - t0 : NaN);
    if (body?.id) {
      t0 = performance.now();
      const gone = await fetch(`${stack.gatewayUrl}/watchlist/${body.id}`, { method: 'DELETE', headers: { apikey: account.key } });
      await gone.arrayBuffer();
      del.push(gone.status === 204 ? performance.now() - t0 : NaN);
    }
    await sleep(200);
  }
  const s = summarise(post.filter(Number.isFinite));
  progress(`  POST p50 ${fmtMs(s.p50)}, p95 ${fmtMs(s.p95)}; ${post.filter((v) => !Number.isFinite(v)).length} failures`);
  return { items, post, del };
}

export interface BaselineResult {
  /** Seconds from the last create until every item had its baseline (null: not within the timeout). */
  seconds: number | null;
  members: number;
  baselined: number;
  /** Seconds until the relays' cursors reached the newest watchlist change and the monitors queue was empty. */
  relaysSeconds: number | null;
}

/** Waits until every created item has its baseline; then until the relays are done with the creates. */
export async function waitForBaselines(bench: BenchConfig, stack: Stack, created: CreateResult, life: Lifecycle): Promise<BaselineResult> {
  progress(`phase 2: waiting until all ${created.created} items have their baseline...`);
  let members = 0;
  let baselined = 0;
  let seconds: number | null = null;
  let printed = Date.now();
  while (Date.now() - created.lastCreateAt < bench.baselineTimeoutMs) {
    life.check();
    const r = (await stack.db('monitor_members').first(stack.db.raw('count(*)::int AS members'), stack.db.raw('count(baseline_snapshot_id)::int AS baselined'))) as { members: number; baselined: number };
    ({ members, baselined } = r);
    if (baselined >= created.created) {
      seconds = (Date.now() - created.lastCreateAt) / 1000;
      break;
    }
    if (Date.now() - printed >= PROGRESS_MS) {
      printed = Date.now();
      progress(`  ${((Date.now() - created.lastCreateAt) / 1000).toFixed(0)} s after the last create: ${members} members, ${baselined} with a baseline`);
    }
    await sleep(250);
  }
  progress(
    seconds !== null
      ? `  every item has its baseline ${seconds.toFixed(1)} s after the last create`
      : `  NOT every item has its baseline ${bench.baselineTimeoutMs / 1000} s after the last create (${baselined}/${created.created}, ${members} members); going on`,
  );

  // The per-item monitor workflows (lifecycle only) are started by the other relay; the quiet
  // window should not measure them catching up.
  const relaysStarted = Date.now();
  let relaysSeconds: number | null = null;
  printed = Date.now();
  while (Date.now() - relaysStarted < 120_000) {
    life.check();
    const head = Number((await stack.db('watchlist_changes').max('id as m').first())?.m ?? 0);
    const cursors: { name: string; last_id: string }[] = await stack.db('relay_cursors').select('name', 'last_id');
    const behind = cursors.filter((c) => Number(c.last_id) < head);
    const backlog = await stack.monitorBacklog();
    if (cursors.length >= 2 && behind.length === 0 && (backlog ?? 0) === 0) {
      relaysSeconds = (Date.now() - created.lastCreateAt) / 1000;
      break;
    }
    if (Date.now() - printed >= PROGRESS_MS) {
      printed = Date.now();
      progress(`  relays: ${cursors.map((c) => `${c.name} ${head - Number(c.last_id)} behind`).join(', ') || 'no cursor yet'}; monitors workflow backlog ${backlog ?? '?'}`);
    }
    await sleep(500);
  }
  if (relaysSeconds === null) progress('  the relays did not catch up within 120 s; measuring anyway');
  return { seconds, members, baselined, relaysSeconds };
}

const SETTLE_STEP_MS = 5_000;
const SETTLE_MAX_MS = 90_000;

/**
 * Before the quiet window: the creates leave work behind in the Temporal server (the per-item
 * monitor workflows' first tasks, its own timers and visibility writes) after the relays are
 * done. Waits at least two intervals, then until the server's CPU over 5 s is back near its
 * idle level (idle + 1% of a core; without an idle window, until it stops falling), at most
 * 90 s. Returns the seconds waited.
 */
export async function settleAfterCreates(bench: BenchConfig, stack: Stack, idle: Window | null, life: Lifecycle): Promise<number> {
  const started = Date.now();
  const until = async (ms: number) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      life.check();
      await sleep(Math.min(1_000, end - Date.now()));
    }
  };
  await until(2 * bench.intervalMs);
  const floor = idle ? percent(idle, 'temporal') + 1 : null;
  let previous = Infinity;
  while (Date.now() - started < SETTLE_MAX_MS) {
    const a = await stack.meter.read(false);
    await until(SETTLE_STEP_MS);
    const now = percent(between('settle', a, await stack.meter.read(false)), 'temporal');
    if (floor !== null ? now <= floor : now >= previous - 0.5) break;
    progress(`  settling: the Temporal server still uses ${now.toFixed(1)} % of a core${floor !== null ? ` (idle: ${(floor - 1).toFixed(1)} %)` : ''}`);
    previous = now;
  }
  return (Date.now() - started) / 1000;
}
