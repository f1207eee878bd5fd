// An endpoint down for 2 minutes (issue 15), on the production retry schedule: the receiver's
// port refuses connections while notifications keep coming, then it listens again. Every message
// arrives, at the first attempt its schedule makes after the recovery, each under one webhook-id
// and verified by the reference implementation; the waits between attempts follow the schedule
// (5 s, 30 s, 2 min, ..., each ±20 %).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SCHEDULE_MS, JITTER } from '../../../src/webhooks/retry-schedule.ts';
import { eventually, newAccount, type TestAccount } from '../../support/harness.ts';
import { startReceiver, type Receiver } from '../../support/webhook-receiver.ts';
import { useWebhookStack } from '../../support/webhook-stack.ts';
import { createItem } from '../watchlist/helpers.ts';
import { createWebhook } from './helpers.ts';

const OUTAGE_MS = 120_000;
/** A notification every 12 s through the outage: ten messages at different points of their schedules. */
const MESSAGES = 10;
const EVERY_MS = OUTAGE_MS / MESSAGES;
/** Timers and task dispatch on a loaded machine, on top of the schedule's own jitter. */
const SLACK_MS = 6_000;

const stack = useWebhookStack({ scheduleMs: [...DEFAULT_SCHEDULE_MS] });
let acct: TestAccount;
let rx: Receiver;

beforeAll(async () => {
  acct = await newAccount(stack.db);
  rx = await startReceiver();
});

afterAll(async () => {
  await rx?.close();
});

describe('an endpoint that refuses for 2 minutes, then recovers', () => {
  it('gets every message, once per webhook-id, at the first attempt after it is back, on schedule', { timeout: 360_000 }, async () => {
    const hook = await createWebhook(stack.gateway.url, acct.key, { url: rx.url });
    rx.secrets = [hook.secret as string];
    const item = await createItem(stack.gateway.url, acct.key, { webhook_setting_id: hook.id });

    await rx.down();
    const downAt = Date.now();
    const sent: number[] = [];
    for (let i = 0; i < MESSAGES; i++) {
      sent.push(await stack.notify(acct.accountId, item.id, { after: { stock: 10 + i, min_price: null, avg_price: null } }));
      await new Promise((r) => setTimeout(r, Math.max(0, downAt + (i + 1) * EVERY_MS - Date.now())));
    }
    await rx.up();
    const upAt = Date.now();
    expect(rx.received).toHaveLength(0);

    // The latest any message may arrive: its first attempt after upAt, its step at +20 %.
    const deliveries = await eventually(
      async () => {
        const rows = await stack.db('webhook_deliveries').whereIn('notification_id', sent).orderBy('notification_id');
        return rows.length === MESSAGES && rows.every((d) => d.state === 'delivered') ? rows : undefined;
      },
      DEFAULT_SCHEDULE_MS[2]! * (1 + JITTER) + 30_000,
    );

    // One delivery per notification; every copy that arrived verified, and a notification never
    // came under two webhook-ids.
    expect(deliveries.map((d) => Number(d.notification_id))).toEqual(sent);
    expect(rx.received.every((r) => r.verified[0] === true)).toBe(true);
    const idsOf = new Map<number, Set<string>>();
    for (const r of rx.received) {
      const nid = (JSON.parse(r.body) as { data: { id: number } }).data.id;
      idsOf.set(nid, (idsOf.get(nid) ?? new Set()).add(String(r.headers['webhook-id'])));
    }
    expect([...idsOf.keys()].sort((a, b) => a - b)).toEqual(sent);
    for (const d of deliveries) expect(idsOf.get(Number(d.notification_id))).toEqual(new Set([d.message_id]));

    for (const d of deliveries) {
      const attempts = await stack.db('webhook_attempts').where({ delivery_id: d.id }).orderBy('id');
      const times = attempts.map((a) => (a.attempted_at as Date).getTime());
      // Every attempt before the recovery failed (refused, no status); the first after it delivered.
      const last = attempts[attempts.length - 1]!;
      expect(last.status_code).toBe(204);
      expect(attempts.slice(0, -1).every((a) => a.status_code === null && a.error)).toBe(true);
      expect(times.slice(0, -1).every((t) => t < upAt)).toBe(true);
      expect(times[times.length - 1]!).toBeGreaterThanOrEqual(upAt);
      // Each wait is its step of the schedule, within the jitter.
      for (let i = 1; i < times.length; i++) {
        const step = DEFAULT_SCHEDULE_MS[i - 1]!;
        const gap = times[i]! - times[i - 1]!;
        expect(gap, `delivery ${d.id} wait ${i}`).toBeGreaterThanOrEqual(step * (1 - JITTER) - 100);
        expect(gap, `delivery ${d.id} wait ${i}`).toBeLessThanOrEqual(step * (1 + JITTER) + SLACK_MS);
      }
    }
  });
});
