// One current subscription per Stripe customer (issue 25): the mirror keeps every subscription it
// reads and derives the account's current one (a served status first, then the newest), and a
// read older than the stored one changes nothing. The subscriptions are stripe-mock's, read as
// Stripe serves them, then given the ids, statuses and creation times each test writes down;
// the expected current subscription is worked out by the test from those, never read back. Also:
// the plan's optional scrape limit reaches the plans row.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { MIRROR_EXPAND, mirrorSubscription } from '../../../src/billing/stripe/mirror.ts';
import { basePrice, PLAN_METADATA } from '../../../src/billing/stripe/plan-terms.ts';
import { testConfig } from '../../support/harness.ts';
import { stripeMockUrl } from '../../support/stripe-mock.ts';

let db: Db;
let template: Stripe.Subscription;

beforeAll(async () => {
  db = createDb({ connectionString: testConfig().DATABASE_URL!, poolMax: 6 });
  const url = new URL(stripeMockUrl());
  const stripe = new Stripe('sk_test_current', { host: url.hostname, port: Number(url.port), protocol: 'http' });
  const listed = (await stripe.subscriptions.list({ limit: 1 })).data[0]!;
  template = await stripe.subscriptions.retrieve(listed.id, { expand: MIRROR_EXPAND });
});
afterAll(async () => {
  await db?.destroy();
});

type Status = 'active' | 'trialing' | 'past_due' | 'canceled' | 'unpaid' | 'paused';
const SERVED: readonly Status[] = ['active', 'trialing'];

/** A customer of ours in Stripe: an account whose customer id is new. */
async function customer(): Promise<{ accountId: number; customerId: string }> {
  const customerId = `cus_${randomUUID().replaceAll('-', '').slice(0, 14)}`;
  const [row] = await db('accounts').insert({ name: 'current-subscription', customer_id: customerId }).returning('id');
  return { accountId: Number(row.id), customerId };
}

/** stripe-mock's subscription as Stripe would send it for this customer, id, status and creation time. */
function subscription(customerId: string, id: string, status: Status, created: number): Stripe.Subscription {
  const sub = structuredClone(template);
  const cust = typeof sub.customer === 'string' ? customerId : { ...sub.customer, id: customerId };
  return { ...sub, id, status, created, customer: cust as Stripe.Subscription['customer'] };
}

async function current(accountId: number): Promise<{ id: string; status: string } | undefined> {
  return db('subscriptions').where({ account_id: accountId }).first('id', 'status');
}

const at = (s: number) => new Date(Date.UTC(2026, 10, 1) + s * 1000);

describe('the current subscription of a Stripe customer', () => {
  it('a customer who canceled and subscribed again stays served, whichever subscription is read last (the reconcile run lists newest first)', async () => {
    const { accountId, customerId } = await customer();
    const old = subscription(customerId, `sub_old_${accountId}`, 'canceled', 1_700_000_000);
    const renewed = subscription(customerId, `sub_new_${accountId}`, 'active', 1_760_000_000);
    expect(await mirrorSubscription(db, renewed, at(1))).toBe('mirrored');
    expect(await mirrorSubscription(db, old, at(1))).toBe('mirrored');
    expect(await current(accountId)).toEqual({ id: renewed.id, status: 'active' });
    // The other order, as a webhook about the old one arriving late would give.
    const other = await customer();
    await mirrorSubscription(db, subscription(other.customerId, `sub_old_${other.accountId}`, 'canceled', 1_700_000_000), at(1));
    await mirrorSubscription(db, subscription(other.customerId, `sub_new_${other.accountId}`, 'trialing', 1_760_000_000), at(2));
    expect(await current(other.accountId)).toEqual({ id: `sub_new_${other.accountId}`, status: 'trialing' });
  });

  it('a read older than the one stored changes nothing: an active subscription canceled since stays canceled', async () => {
    const { accountId, customerId } = await customer();
    const id = `sub_one_${accountId}`;
    expect(await mirrorSubscription(db, subscription(customerId, id, 'canceled', 1_750_000_000), at(10))).toBe('mirrored');
    expect(await mirrorSubscription(db, subscription(customerId, id, 'active', 1_750_000_000), at(5))).toBe('stale');
    expect(await current(accountId)).toEqual({ id, status: 'canceled' });
  });

  it("mirrors the plan's optional scrape limit (issue 36) into plans, and its removal back to NULL (the service default)", async () => {
    const { accountId, customerId } = await customer();
    const plan = `mirrored_${accountId}`;
    const sub = subscription(customerId, `sub_limit_${accountId}`, 'active', 1_760_000_000);
    const base = basePrice(sub)!;
    const limit = () => db('plans').where({ id: plan }).first('scrape_requests_per_platform_per_minute', 'price_id');
    base.metadata = { [PLAN_METADATA.plan]: plan, [PLAN_METADATA.included]: '100', [PLAN_METADATA.hardCap]: '100', [PLAN_METADATA.scrapeRequestsPerPlatformPerMinute]: '7' };
    expect(await mirrorSubscription(db, sub, at(1))).toBe('mirrored');
    expect(await limit()).toEqual({ scrape_requests_per_platform_per_minute: 7, price_id: base.id });
    delete base.metadata[PLAN_METADATA.scrapeRequestsPerPlatformPerMinute];
    expect(await mirrorSubscription(db, sub, at(2))).toBe('mirrored');
    expect(await limit()).toEqual({ scrape_requests_per_platform_per_minute: null, price_id: base.id });
  });

  it('when none is served, the newest is current (its status is what admission refuses with)', async () => {
    const { accountId, customerId } = await customer();
    await mirrorSubscription(db, subscription(customerId, `sub_a_${accountId}`, 'past_due', 1_760_000_000), at(1));
    await mirrorSubscription(db, subscription(customerId, `sub_b_${accountId}`, 'canceled', 1_700_000_000), at(2));
    expect(await current(accountId)).toEqual({ id: `sub_a_${accountId}`, status: 'past_due' });
  });

  it('property: reads of a customer\'s subscriptions in any order, some at once (webhook racing the reconcile run), leave the current one the rule gives', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 3 }).chain((created) =>
          fc.array(
            fc.record({ which: fc.nat(created.length - 1), status: fc.constantFrom<Status>('active', 'trialing', 'past_due', 'canceled', 'unpaid'), readAt: fc.integer({ min: 0, max: 50 }), batch: fc.nat(2) }),
            { minLength: 1, maxLength: 8 },
          ).map((reads) => ({ created, reads })),
        ),
        async ({ created, reads }) => {
          const { accountId, customerId } = await customer();
          const ids = created.map((_, i) => `sub_p${i}_${accountId}`);
          // The ground truth: per subscription, its latest read (by read time; a tie keeps either), then the rule.
          const latest = new Map<number, { status: Status; readAt: number }[]>();
          for (const r of reads) {
            const known = latest.get(r.which) ?? [];
            if (!known.length || r.readAt > known[0]!.readAt) latest.set(r.which, [r]);
            else if (r.readAt === known[0]!.readAt) known.push(r);
          }
          // Reads delivered in batches; a batch's reads race each other.
          for (let batch = 0; batch <= 2; batch++) {
            await Promise.all(
              reads.filter((r) => r.batch === batch).map((r) => mirrorSubscription(db, subscription(customerId, ids[r.which]!, r.status, 1_700_000_000 + created[r.which]! * 1000), at(r.readAt))),
            );
          }
          const got = await current(accountId);
          const candidates = [...latest.entries()];
          // Every status a tie could leave: the current subscription must be the rule's pick for one of them.
          const possible = new Set<string>();
          const expand = (i: number, chosen: [number, Status][]): void => {
            if (i === candidates.length) {
              const best = [...chosen].sort(([a, sa], [b, sb]) => Number(SERVED.includes(sb)) - Number(SERVED.includes(sa)) || created[b]! - created[a]!)[0]!;
              possible.add(JSON.stringify({ id: ids[best[0]]!, status: best[1] }));
              return;
            }
            const [which, options] = candidates[i]!;
            for (const o of options) expand(i + 1, [...chosen, [which, o.status]]);
          };
          expand(0, []);
          expect(possible).toContain(JSON.stringify(got));
        },
      ),
      { numRuns: 60 },
    );
  });
});
