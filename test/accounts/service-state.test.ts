// The served state and the monitors' membership (issue 25), against the real membership relay,
// PostgreSQL and Temporal: after any interleaving of watchlist writes, subscription changes,
// relay batches and service sweeps (run concurrently, as two workers would), the members are
// exactly the active items of served accounts, as the test's own model of what it did says,
// and an account served again comes back without baselines (its first poll sets them, so
// nothing that changed meanwhile is notified).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { servedStates, sweepServiceState } from '../../src/accounts/service-state.ts';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import { WatchlistStore } from '../../src/apis/watchlist/store.ts';
import { createLogger } from '../../src/logger.ts';
import { memberServiceHooks, startMembershipRelay, type MembershipRelay } from '../../src/monitors/membership.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { databaseUrl, newAccount } from '../support/harness.ts';
import { temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from '../support/temporal.ts';

let scratch: ScratchDatabase;
let db: Db;
let relay: MembershipRelay;
let closeTemporal: () => Promise<void>;
let hooks: ReturnType<typeof memberServiceHooks>[];

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_service_state', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 8 });
  const temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  closeTemporal = temporal.close;
  // No worker serves this queue: the shard pollers the relay starts only wait; members are rows.
  const opts = { db, connectionString: scratch.url, client: temporal.client, taskQueue: uniqueTaskQueue('service-state'), shardsPerPlatform: 2, log: createLogger('silent') };
  relay = startMembershipRelay(opts);
  hooks = [memberServiceHooks(opts)];
}, 60_000);
afterAll(async () => {
  await relay?.stop();
  await closeTemporal?.();
  await db?.destroy();
  await scratch?.drop();
});

const STATUSES = ['active', 'trialing', 'past_due', 'paused', 'canceled', 'unpaid'] as const;
const served = (status: string) => status === 'active' || status === 'trialing';

type Op =
  | { op: 'create'; account: number; event: number }
  | { op: 'pause'; item: number; active: boolean }
  | { op: 'delete'; item: number }
  | { op: 'status'; account: number; status: (typeof STATUSES)[number] }
  | { op: 'drain' }
  | { op: 'sweep' }
  | { op: 'both' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('create' as const), account: fc.nat(2), event: fc.nat(3) }),
  fc.record({ op: fc.constant('pause' as const), item: fc.nat(20), active: fc.boolean() }),
  fc.record({ op: fc.constant('delete' as const), item: fc.nat(20) }),
  fc.record({ op: fc.constant('status' as const), account: fc.nat(2), status: fc.constantFrom(...STATUSES) }),
  fc.constant({ op: 'drain' as const }),
  fc.constant({ op: 'sweep' as const }),
  fc.constant({ op: 'both' as const }),
);

describe('only served accounts have members', { timeout: 300_000 }, () => {
  it('members are the active items of served accounts after any interleaving (property)', async () => {
    const store = new WatchlistStore(db);
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        // The model: what the test did, written down as it does it.
        const accounts = await Promise.all([0, 1, 2].map(() => newAccount(db)));
        const status = accounts.map(() => 'active' as string);
        const items: { id: number; account: number; active: boolean; deleted: boolean }[] = [];
        for (const o of ops) {
          if (o.op === 'create') {
            const a = accounts[o.account]!;
            const item = await store.create(a.accountId, { ...ITEM_DEFAULTS, website: 'pf_03', event: `https://pf03.example/e/prop-${o.event}`, region: 'fr' }, 1_000);
            items.push({ id: item.id, account: o.account, active: true, deleted: false });
          } else if (o.op === 'pause' || o.op === 'delete') {
            const it = items[o.item % Math.max(1, items.length)];
            if (!it || it.deleted) continue;
            const a = accounts[it.account]!;
            if (o.op === 'delete') {
              await store.softDelete(a.accountId, it.id);
              it.deleted = true;
            } else {
              await store.update(a.accountId, it.id, { task_active: o.active }, () => null);
              it.active = o.active;
            }
          } else if (o.op === 'status') {
            await db('subscriptions').where({ account_id: accounts[o.account]!.accountId }).update({ status: o.status });
            status[o.account] = o.status;
          } else if (o.op === 'drain') {
            await relay.drain();
          } else if (o.op === 'sweep') {
            await sweepServiceState(db, hooks);
          } else {
            // Two workers at once: the relay's batch and a sweep race on the same accounts.
            await Promise.all([relay.drain(), sweepServiceState(db, hooks)]);
          }
        }
        await relay.drain();
        await sweepServiceState(db, hooks);
        const mine = accounts.map((a) => a.accountId);
        const members: { item_id: string }[] = await db('monitor_members').whereIn('account_id', mine).select('item_id');
        const expected = items.filter((i) => i.active && !i.deleted && served(status[i.account]!)).map((i) => i.id);
        expect(members.map((m) => Number(m.item_id)).sort((x, y) => x - y)).toEqual(expected.sort((x, y) => x - y));
        // The stored state is the model's.
        const states = await db.transaction((trx) => servedStates(trx, mine));
        expect(mine.map((id) => states.get(id))).toEqual(status.map(served));
      }),
      { numRuns: 40 },
    );
  });

  it('an account served again comes back without baselines; one never suspended keeps its own', async () => {
    const store = new WatchlistStore(db);
    const [lapsing, steady] = await Promise.all([newAccount(db), newAccount(db)]);
    const event = 'https://pf03.example/e/baselines';
    const a = await store.create(lapsing.accountId, { ...ITEM_DEFAULTS, website: 'pf_03', event, region: 'fr' }, 1_000);
    const b = await store.create(steady.accountId, { ...ITEM_DEFAULTS, website: 'pf_03', event, region: 'fr' }, 1_000);
    await relay.drain();
    await sweepServiceState(db, hooks);
    // As a poll records them (record-poll.ts).
    const [snap] = await db('target_snapshots').insert({ target: 'pf_03:fr:baselines', hash: 'h', data: JSON.stringify({}), scraped_at: new Date() }).returning('id');
    await db('monitor_members').whereIn('item_id', [a.id, b.id]).update({ baseline_snapshot_id: snap.id });
    await db('subscriptions').where({ account_id: lapsing.accountId }).update({ status: 'canceled' });
    expect(await sweepServiceState(db, hooks)).toMatchObject({ suspended: [lapsing.accountId] });
    expect(await db('monitor_members').where({ item_id: a.id }).first()).toBeUndefined();
    await db('subscriptions').where({ account_id: lapsing.accountId }).update({ status: 'trialing' });
    expect(await sweepServiceState(db, hooks)).toMatchObject({ resumed: [lapsing.accountId] });
    const rows: { item_id: string; baseline_snapshot_id: string | null }[] = await db('monitor_members').whereIn('item_id', [a.id, b.id]).orderBy('item_id').select('item_id', 'baseline_snapshot_id');
    expect(Object.fromEntries(rows.map((r) => [Number(r.item_id), r.baseline_snapshot_id === null ? null : Number(r.baseline_snapshot_id)]))).toEqual({ [a.id]: null, [b.id]: Number(snap.id) });
    // A sweep with nothing changed acts on nothing.
    expect(await sweepServiceState(db, hooks)).toEqual({ suspended: [], resumed: [] });
  });

  it('a period that ended with cancel_at_period_end is not served, before any paid request rolls it', async () => {
    const acct = await newAccount(db);
    await sweepServiceState(db, hooks);
    await db('subscriptions')
      .where({ account_id: acct.accountId })
      .update({ cancel_at_period_end: true, current_period_end: new Date(Date.now() - 1_000) });
    expect((await sweepServiceState(db, hooks)).suspended).toContain(acct.accountId);
  });
});
