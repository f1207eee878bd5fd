// The monitors' polls through a proxy pool (issue 27), all real: the worker polls pf_03 through
// four proxy-chain proxies whose connections come from 127.0.0.2-5 (test/support/loopback-
// proxies.ts), and the simulator limits and bans by source address. The polls spread over every
// proxy and never leave from this machine's own address; a proxy banned mid-run is set aside and
// its targets go out through the others at once, each change notified exactly once; with every
// proxy banned nothing is read as an empty inventory, and the changes made meanwhile are
// notified once each when the bans end. Ground truth: the changes the test writes down before it
// makes them, and the simulator's own request log (who asked, and what it refused).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/harness.ts';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { baselined, eventually, notificationsOf, useMonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';

const INTERVAL_MS = 300;
const PROXIES = 4;
let proxies: LoopbackProxies;

beforeAll(async () => {
  proxies = await startLoopbackProxies(PROXIES, { credentials: { username: 'scraper', password: 'proxy-pass-0931' } });
});
afterAll(async () => {
  await proxies?.close();
});

const stack = useMonitorStack({
  intervalMs: INTERVAL_MS,
  env: () => ({
    SCRAPE_PROXY_URLS: `pf_03=${proxies.setting}`,
    SCRAPE_RPS_PER_PROXY: 'pf_03=20',
    // One shard, so each target's budget is the whole pool's (shards split it evenly).
    MONITOR_SHARDS_PER_PLATFORM: '1',
    // Short, so a banned proxy is tried again within the test (and found still banned).
    SCRAPE_PROXY_COOLDOWN_MS: '1500',
  }),
});

interface SimRequest {
  at: number;
  key: string;
  address: string;
  refused?: boolean;
}

async function simRequests(since: number): Promise<SimRequest[]> {
  const res = await fetch(`${stack.sim.url}/_sim/requests?since=${since}&platform=pf_03`);
  return ((await res.json()) as { requests: SimRequest[] }).requests;
}

async function sim(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${stack.sim.url}/_sim${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`simulator ${method} ${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });

interface Watched {
  id: number;
  event: string;
  key: string;
}

/** Watches `n` new pf_03 events of one account, each with one ticket, until every item has its baseline. */
async function watchMany(n: number): Promise<{ accountId: number; items: Watched[] }> {
  const acct = await stack.account();
  const items: Watched[] = [];
  for (let i = 0; i < n; i++) {
    const key = `proxied-${randomUUID().slice(0, 8)}`;
    const event = `https://pf03.example/e/${key}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(1));
    const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(res.status).toBe(201);
    items.push({ id: res.body.id as number, event, key });
  }
  for (const item of items) await baselined(stack, item.id);
  return { accountId: acct.accountId, items };
}

/** Until every item has `count` notifications; then one more interval, and they must still be `count` (none doubled). */
async function notifiedExactly(accountId: number, items: Watched[], count: number): Promise<void> {
  const per = async () => {
    const rows = await notificationsOf(stack, accountId);
    return items.map((item) => rows.filter((r) => r.itemId === item.id).length);
  };
  await eventually(async () => ((await per()).every((c) => c >= count) ? true : undefined), 30_000);
  await new Promise((r) => setTimeout(r, 4 * INTERVAL_MS));
  expect(await per()).toEqual(items.map(() => count));
}

const addresses = (pool: LoopbackProxies) => pool.proxies.map((p) => p.address);

describe('polls through a proxy pool', { timeout: 180_000 }, () => {
  let watched: { accountId: number; items: Watched[] };

  it('spread over every proxy, and never leave from this machine', async () => {
    await sim('PUT', '/pf_03/limits', { requests_per_minute: 2_400, ban_ms: 600_000, ban_answer: 'challenge' });
    const since = Date.now();
    watched = await watchMany(6);
    await new Promise((r) => setTimeout(r, 3_000));
    const seen = await simRequests(since);
    const ours = seen.filter((r) => watched.items.some((i) => i.key === r.key));
    expect(ours.length).toBeGreaterThan(30);
    const used = new Set(ours.map((r) => r.address));
    expect([...used].sort()).toEqual(addresses(proxies).sort());
    // Spread: no proxy took more than twice its share.
    for (const a of used) expect(ours.filter((r) => r.address === a).length).toBeLessThan((2 * ours.length) / PROXIES);
    expect(ours.filter((r) => r.refused)).toEqual([]);
  });

  it('a proxy banned mid-run is set aside; its targets go out through the others at once, and each change is notified once', async () => {
    const banned = proxies.proxies[0]!.address;
    await sim('POST', '/pf_03/bans', { address: banned, ms: 600_000 });
    const bannedAt = Date.now();
    // The ground truth: each event goes from 1 ticket to 3, written down before it is made.
    const changes = watched.items.map((item) => ({ item, stock: 3 }));
    for (const c of changes) await putEvent(stack.sim, 'pf_03', c.item.event, stalls(c.stock));
    await notifiedExactly(watched.accountId, watched.items, 1);
    // Enough served polls of each target to judge its gaps by (whatever the machine's load made
    // of the time the notifications took).
    const servedOf = (rows: SimRequest[], key: string) => rows.filter((r) => r.key === key && !r.refused).length;
    const after = await eventually(async () => {
      const rows = (await simRequests(bannedAt)).filter((r) => watched.items.some((i) => i.key === r.key));
      return watched.items.every((i) => servedOf(rows, i.key) > 3) ? rows : undefined;
    }, 20_000);
    // Nothing the banned address asked was served, and it was tried again only after cool-downs.
    const fromBanned = after.filter((r) => r.address === banned);
    const trace = JSON.stringify(after.map((r) => [r.at - bannedAt, r.key.slice(-4), r.address, r.refused]));
    expect(fromBanned.every((r) => r.refused), trace).toBe(true);
    expect(fromBanned.length, trace).toBeLessThanOrEqual(12);
    // Every target kept being polled: its served polls never further apart than a few intervals.
    for (const item of watched.items) {
      const times = after.filter((r) => r.key === item.key && !r.refused).map((r) => r.at);
      expect(times.length, trace).toBeGreaterThan(3);
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      expect(Math.max(times[0]! - bannedAt, ...gaps), trace).toBeLessThan(4 * INTERVAL_MS + 1_000);
    }
    // The limiter never banned a healthy address: the only ban is the one the test made.
    const limits = (await sim('GET', '/pf_03/limits')) as { addresses: Record<string, { bans: number }>; totals: { bans_issued: number } };
    expect(limits.totals.bans_issued, JSON.stringify(limits)).toBe(1);
    // The item rows say the poll worked, not that the target is blocked.
    expect(await stack.db('monitor_target_status').whereIn('target', stack.db('monitor_members').select('target').whereIn('item_id', watched.items.map((i) => i.id)))).toEqual([]);
  });

  it('with every proxy banned nothing is read as empty, and the changes made meanwhile are notified once when the bans end', async () => {
    for (const address of addresses(proxies)) await sim('POST', '/pf_03/bans', { address, ms: 5_000 });
    const from = Date.now();
    const snapshotsBefore = Number((await stack.db('target_snapshots').count({ n: '*' }).first())!.n);
    for (const item of watched.items) await putEvent(stack.sim, 'pf_03', item.event, stalls(5));
    await new Promise((r) => setTimeout(r, 3_000));
    // Nothing recorded while every address is refused: no snapshot, no notification.
    expect(Number((await stack.db('target_snapshots').count({ n: '*' }).first())!.n)).toBe(snapshotsBefore);
    const during = await notificationsOf(stack, watched.accountId);
    expect(during.filter((r) => r.createdAt.getTime() >= from)).toEqual([]);
    // The bans end on their own; the cool-downs end after them (back-off up to a few seconds).
    await notifiedExactly(watched.accountId, watched.items, 2);
    const rows = await notificationsOf(stack, watched.accountId);
    for (const item of watched.items) {
      const last = rows.filter((r) => r.itemId === item.id).at(-1)!;
      expect(last.payload).toMatchObject({ after: { stock: 5 } });
    }
  });
});

