// pf_01 watched end to end by the production worker entry (a child process, as `npm run worker`
// runs it) with sessions made in its Chromium and polls over HTTP (issue 23): items created
// through the Watchlist API, stock set exactly through the simulator, notifications read from
// the durable log. The ground truth is what the test changed and the simulator's own count of
// sessions issued, and the worker's /metrics is checked against them, not the other way round.
import { describe, expect, it } from 'vitest';
import { call } from '../support/harness.ts';
import { baselined, eventually, notificationsOf, polledAgain, useMonitorStack, type MonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';

const SESSIONS = 2;
const stack: MonitorStack = useMonitorStack({ intervalMs: 300, worker: 'child-process', env: { BROWSER_SESSIONS: String(SESSIONS) } });

let serial = 0;
function newKey(): string {
  return `Pf01Mon${String(Date.now() % 1e6).padStart(6, '0')}${String(++serial).padStart(3, '0')}`;
}

async function setStock(key: string, stock: number): Promise<void> {
  await putEvent(stack.sim, 'pf_01', key, { region: 'uk', sections: [section('Floor', 50, stock)] });
}

/** The worker's counter or gauge value for these labels (0 when the series is absent). */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(stack.metricsUrl!)).text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `) ? want.every((w) => l.includes(w)) : false);
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('pf_01 monitored over HTTP with browser-made sessions', () => {
  it('notifies every change once, with at most one session per pool slot, and renews a revoked session for all its targets at once', async () => {
    const acct = await stack.account();
    const keys = [newKey(), newKey(), newKey()];
    for (const key of keys) await setStock(key, 10);
    const issued0 = stack.sim.protection.stats().sessions_issued;
    const items: { id: number; key: string }[] = [];
    for (const key of keys) {
      for (let i = 0; i < 2; i++) {
        const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_01', event: key, region: 'uk' } });
        expect(res.status).toBe(201);
        items.push({ id: res.body.id as number, key });
      }
    }
    for (const item of items) await baselined(stack, item.id, 60_000);

    // The ground truth: the stock each target goes through, written down before it is set.
    const steps = [13, 7, 21];
    const expected: { key: string; before: number; after: number }[] = [];
    for (const [round, stock] of steps.entries()) {
      if (round === 1) {
        // Mid-run the platform revokes every session: polls meet the refusal together.
        stack.sim.protection.revokeAll();
      }
      for (const key of keys) {
        const before = round === 0 ? 10 : steps[round - 1]!;
        // Only a stock increase notifies (docs/monitoring.md, change rules): 13 -> 7 does not.
        if (stock > before) expected.push({ key, before, after: stock });
        await setStock(key, stock);
      }
      for (const key of keys) await polledAgain(stack, 'pf_01', key);
    }
    const want = expected.length * 2;
    const rows = await eventually(async () => {
      const all = (await notificationsOf(stack, acct.accountId)).filter((r) => items.some((i) => i.id === r.itemId));
      return all.length >= want ? all : undefined;
    }, 60_000);
    for (const key of keys) await polledAgain(stack, 'pf_01', key);
    const after = (await notificationsOf(stack, acct.accountId)).filter((r) => items.some((i) => i.id === r.itemId));
    expect(after).toHaveLength(rows.length);
    // Each change, for each of the target's two items, exactly once.
    const seen = after.map((r) => `${r.itemId}:${(r.payload.before as { stock: number }).stock}->${(r.payload.after as { stock: number }).stock}`).sort();
    const truth = items.flatMap((item) => expected.filter((e) => e.key === item.key).map((e) => `${item.id}:${e.before}->${e.after}`)).sort();
    expect(seen).toEqual(truth);

    // Sessions: the pool's slots once each, then one renewal per slot after the revocation, at most.
    const issued = stack.sim.protection.stats().sessions_issued - issued0;
    expect(issued).toBeGreaterThanOrEqual(2);
    expect(issued).toBeLessThanOrEqual(2 * SESSIONS);
    // The worker's metrics say the same as the simulator: every session it made is one issued.
    expect(await metric('scrape_sessions_total', { platform: 'pf_01', event: 'made' })).toBe(issued);
    expect(await metric('scrape_sessions_total', { platform: 'pf_01', event: 'refused' })).toBeGreaterThanOrEqual(1);
    expect(await metric('browser_page_loads_total')).toBe(issued);
    expect(await metric('scrape_session_requests_total', { platform: 'pf_01' })).toBeGreaterThan(issued * 5);
    expect(await metric('scrape_sessions_size', { platform: 'pf_01' })).toBe(SESSIONS);
    expect(await metric('monitor_polls_total', { platform: 'pf_01', outcome: 'failed' })).toBe(0);
  }, 180_000);

  it('an arm failing and recovering with nothing changed notifies nothing; a change made while it was down is notified once at its recovery (issue 24)', async () => {
    const acct = await stack.account();
    const key = newKey();
    const venue = (resale: number, arms = { v1: 'ok', v2: 'ok' }) =>
      putEvent(stack.sim, 'pf_01', key, {
        region: 'uk',
        arms,
        sections: [section('Floor', 50, 10), section('Resale Block', 90, resale, { ticket_type: 'resale' })],
      });
    await venue(4);
    const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_01', event: key, region: 'uk', resale_tickets: true, change_type: null, stock_threshold_filter: null } });
    expect(res.status).toBe(201);
    const id = res.body.id as number;
    await baselined(stack, id, 60_000);
    // Each arm down, then up, the inventory unchanged: polled through each state.
    for (const arms of [{ v1: 'error', v2: 'ok' }, { v1: 'ok', v2: 'ok' }, { v1: 'ok', v2: 'error' }, { v1: 'ok', v2: 'ok' }]) {
      await venue(4, arms);
      await polledAgain(stack, 'pf_01', key);
    }
    expect((await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id)).toEqual([]);
    // Resale raised while its arm is down: unseen until the arm is back, then notified once.
    await venue(12, { v1: 'error', v2: 'ok' });
    await polledAgain(stack, 'pf_01', key);
    expect((await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id)).toEqual([]);
    await venue(12);
    const rows = await eventually(async () => {
      const mine = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
      return mine.length >= 1 ? mine : undefined;
    });
    await polledAgain(stack, 'pf_01', key);
    const mine = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
    expect(mine).toHaveLength(rows.length);
    expect(mine.map((r) => [r.payload.section, r.payload.change_type, (r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock])).toEqual([['Resale Block', 'stock_increase', 4, 12]]);
  }, 120_000);
  it('resale tickets raised in a section that still has seats reach a resale-only item, once (issue 24)', async () => {
    const acct = await stack.account();
    const key = newKey();
    const venue = (resale: number) =>
      putEvent(stack.sim, 'pf_01', key, { region: 'uk', sections: [section('Floor', 50, 20), section('Floor', 95, resale, { ticket_type: 'resale' })] });
    await venue(4);
    const body = { website: 'pf_01', event: key, region: 'uk', standard_tickets: false, platinum_tickets: false, general_admission_tickets: false, resale_tickets: true, change_type: null, stock_threshold_filter: null };
    const res = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body });
    expect(res.status).toBe(201);
    const id = res.body.id as number;
    await baselined(stack, id, 60_000);
    await venue(12);
    await eventually(async () => ((await notificationsOf(stack, acct.accountId)).some((r) => r.itemId === id) ? true : undefined));
    await polledAgain(stack, 'pf_01', key);
    const mine = (await notificationsOf(stack, acct.accountId)).filter((r) => r.itemId === id);
    expect(mine.map((r) => [r.payload.section, r.payload.change_type, (r.payload.before as { stock: number }).stock, (r.payload.after as { stock: number }).stock])).toEqual([['Floor', 'stock_increase', 4, 12]]);
  }, 120_000);
});
