// Issue 38, "users see each item's health", on the whole path (the Watchlist API on a real
// gateway, the relays, the shard pollers on the run's Temporal server, the simulator): an item
// shows `pending` until its first check, then `ok` with a `last_checked_at` that moves, and
// `last_changed_at` once the event's content changes; the platform refusing the event makes it
// `blocked`, a 5xx `failing`, a 404 `not_found` and then `retired`; a PATCH brings it back; a
// paused item, and an item of an account that is not served, are `paused`. The list carries the
// same fields as the item. What the simulator answers is set through its control API; the
// expected statuses come from the issue, not from the service's constants.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sweepServiceState } from '../../src/accounts/service-state.ts';
import { call } from '../support/harness.ts';
import { eventually, useMonitorStack, type MonitorStack } from '../support/monitor-stack.ts';
import { putEvent, section } from '../support/scrape-stack.ts';
import { expectItem, HEALTH_FIELDS } from '../apis/watchlist/helpers.ts';

const RETIRE_AFTER_MS = 8_000;
const stack: MonitorStack = useMonitorStack({
  intervalMs: 300,
  // A refused event is asked again after 1 s (its Retry-After is 1 s too), so `blocked` ends soon.
  env: { MONITOR_RETIRE_AFTER_MS: String(RETIRE_AFTER_MS), SCRAPE_TARGET_BACKOFF_MS: '1000' },
});

type Health = { last_checked_at: string | null; check_status: string; last_changed_at: string | null };

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });

async function newEvent(setup: Record<string, unknown>): Promise<string> {
  const event = `https://pf03.example/e/health-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', event, setup);
  return event;
}

async function get(key: string, id: number) {
  const r = await call(stack.gateway.url, 'GET', `/watchlist/${id}`, { key });
  expect(r.status, r.text).toBe(200);
  return expectItem(r.body);
}

const health = (item: Health): Health => ({ last_checked_at: item.last_checked_at, check_status: item.check_status, last_changed_at: item.last_changed_at });

/** Until GET shows `status`; returns that answer. */
async function until(key: string, id: number, status: string, ms = 45_000) {
  let last: Health | null = null;
  try {
    return await eventually(async () => {
      const item = await get(key, id);
      last = health(item);
      return item.check_status === status ? item : undefined;
    }, ms);
  } catch (err) {
    throw new Error(`item ${id} never showed ${status}; last: ${JSON.stringify(last)}`, { cause: err });
  }
}

const at = (s: string | null) => (s === null ? NaN : Date.parse(s));

describe('each item shows its health', { timeout: 180_000 }, () => {
  it('pending, then ok (checked, moving; changed), blocked, failing, not_found, and paused; the list matches', async () => {
    const acct = await stack.account();
    // The first answer is slow, so the item is seen before its first check.
    const event = await newEvent({ ...stalls(2), behaviour: 'slow', delay_ms: 2_000 });
    const created = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(created.status, created.text).toBe(201);
    const item = expectItem(created.body);
    expect(health(item)).toEqual({ last_checked_at: null, check_status: 'pending', last_changed_at: null });
    expect(health(await get(acct.key, item.id))).toEqual({ last_checked_at: null, check_status: 'pending', last_changed_at: null });

    // ok: checked, and the time moves with each poll; one version of the content only, so no change yet.
    const firstOk = await until(acct.key, item.id, 'ok');
    expect(at(firstOk.last_checked_at)).toBeGreaterThan(at(item.created_at));
    expect(firstOk.last_changed_at).toBeNull();
    await putEvent(stack.sim, 'pf_03', event, stalls(2));
    const moved = await eventually(async () => {
      const now = await get(acct.key, item.id);
      return at(now.last_checked_at) > at(firstOk.last_checked_at) + 300 ? now : undefined;
    });
    expect(moved.check_status).toBe('ok');
    expect(at(moved.last_checked_at)).toBeLessThanOrEqual(Date.now());

    // Another account's item on the same event: pending (times null) until its own first check.
    const other = await stack.account();
    const second = await call(stack.gateway.url, 'POST', '/watchlist', { key: other.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(health(expectItem(second.body))).toEqual({ last_checked_at: null, check_status: 'pending', last_changed_at: null });
    await until(other.key, second.body.id as number, 'ok');

    // The content changes: last_changed_at is when the new version was read.
    const changedFrom = Date.now();
    await putEvent(stack.sim, 'pf_03', event, stalls(5));
    const changed = await eventually(async () => {
      const now = await get(acct.key, item.id);
      return now.last_changed_at !== null ? now : undefined;
    });
    expect(changed.check_status).toBe('ok');
    expect(at(changed.last_changed_at)).toBeGreaterThanOrEqual(changedFrom - 50);
    expect(at(changed.last_changed_at)).toBeLessThanOrEqual(Date.now());

    // The platform refuses the event (429): blocked, checked at the refusal; back when it answers.
    const blockedFrom = Date.now();
    await putEvent(stack.sim, 'pf_03', event, { ...stalls(5), behaviour: 'blocked', blocked_status: 429, retry_after_s: 1 });
    const blocked = await until(acct.key, item.id, 'blocked');
    expect(at(blocked.last_checked_at)).toBeGreaterThanOrEqual(blockedFrom - 50);
    // The last change is still the one before: a refusal is no content.
    expect(blocked.last_changed_at).toBe(changed.last_changed_at);
    await putEvent(stack.sim, 'pf_03', event, stalls(5));
    await until(acct.key, item.id, 'ok');

    // A 5xx: failing.
    await putEvent(stack.sim, 'pf_03', event, { ...stalls(5), behaviour: 'error' });
    await until(acct.key, item.id, 'failing');
    await putEvent(stack.sim, 'pf_03', event, stalls(5));
    await until(acct.key, item.id, 'ok');

    // A 404: not_found (well before MONITOR_RETIRE_AFTER_MS: the retirement is the next test's).
    const goneAt = Date.now();
    await putEvent(stack.sim, 'pf_03', event, { ...stalls(5), behaviour: 'not_found' });
    const notFound = await until(acct.key, item.id, 'not_found', RETIRE_AFTER_MS / 2);
    expect(at(notFound.last_checked_at)).toBeGreaterThanOrEqual(goneAt - 50);

    // Paused: the PATCH's own answer says so, and so does every read after it; the times stay the
    // event's (nobody checks it any more: the other item is deleted).
    await call(stack.gateway.url, 'DELETE', `/watchlist/${second.body.id}`, { key: other.key });
    const paused = await call(stack.gateway.url, 'PATCH', `/watchlist/${item.id}`, { key: acct.key, body: { task_active: false } });
    expect(paused.status, paused.text).toBe(200);
    expect(expectItem(paused.body).check_status).toBe('paused');
    await new Promise((r) => setTimeout(r, 1_500));
    const pausedRead = await get(acct.key, item.id);
    expect(pausedRead.check_status).toBe('paused');
    expect(at(pausedRead.last_checked_at)).toBeGreaterThanOrEqual(at(notFound.last_checked_at));
    expect(pausedRead.last_changed_at).toBe(changed.last_changed_at);

    // The list carries the same fields, with the same values, in the same place as the item.
    const one = await get(acct.key, item.id);
    const list = await call(stack.gateway.url, 'GET', '/watchlist', { key: acct.key });
    expect(list.status).toBe(200);
    const listed = (list.body as unknown[]).map(expectItem);
    expect(listed.find((i) => i.id === item.id)).toEqual(one);
    expect(Object.keys(listed[0]!).slice(-HEALTH_FIELDS.length)).toEqual(HEALTH_FIELDS);
  });

  it('retired once its event answers not-found for MONITOR_RETIRE_AFTER_MS, no longer checked; checked again after a PATCH', async () => {
    const acct = await stack.account();
    const event = await newEvent(stalls(2));
    const created = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as number;
    await until(acct.key, id, 'ok');
    const goneAt = Date.now();
    await putEvent(stack.sim, 'pf_03', event, { ...stalls(2), behaviour: 'not_found' });
    await until(acct.key, id, 'not_found', RETIRE_AFTER_MS / 2);
    const retired = await until(acct.key, id, 'retired', 60_000);
    expect(at(retired.last_checked_at) - goneAt).toBeGreaterThanOrEqual(RETIRE_AFTER_MS - 1_000);
    // No longer checked: the time stays.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(health(await get(acct.key, id))).toEqual(health(retired));

    // Back on sale and the item updated: checked again.
    await putEvent(stack.sim, 'pf_03', event, stalls(2));
    const patched = await call(stack.gateway.url, 'PATCH', `/watchlist/${id}`, { key: acct.key, body: { max_price_filter: 400 } });
    expect(patched.status, patched.text).toBe(200);
    expect(expectItem(patched.body).check_status).not.toBe('retired');
    const back = await until(acct.key, id, 'ok');
    expect(at(back.last_checked_at)).toBeGreaterThan(at(retired.last_checked_at));
  });

  it('an item of an account that is not served is paused', async () => {
    const acct = await stack.account();
    const event = await newEvent(stalls(2));
    const created = await call(stack.gateway.url, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as number;
    const ok = await until(acct.key, id, 'ok');
    // The subscription is canceled and the service sweep records it (its hooks, which take the
    // account's members out, are not needed for what the item shows).
    await stack.db('subscriptions').where({ account_id: acct.accountId }).update({ status: 'canceled', updated_at: new Date() });
    await sweepServiceState(stack.db, []);
    const paused = await get(acct.key, id);
    expect(paused.check_status).toBe('paused');
    expect(at(paused.last_checked_at)).toBeGreaterThanOrEqual(at(ok.last_checked_at));
    const list = await call(stack.gateway.url, 'GET', '/watchlist', { key: acct.key });
    expect((list.body as { check_status: string }[]).map((i) => i.check_status)).toEqual(['paused']);
  });
});
