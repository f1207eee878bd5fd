// The membership relay's poller starts (src/monitors/membership.ts, issue 40): a shard whose
// poller it started moments ago is not started again for the next batch (during an import those
// no-op starts cost the Temporal server more CPU than the creates themselves), yet a shard the
// relay has just emptied is started again with its next member, and the reconcile starts every
// shard with members whatever the relay remembers. Against the run's real Temporal server, on a
// task queue no worker serves, so a poller the test terminates stays ended unless the relay
// starts it: the workflow's runs are the ground truth of what the relay asked for.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@temporalio/client';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { ITEM_DEFAULTS } from '../../src/apis/watchlist/schema.ts';
import { WatchlistStore } from '../../src/apis/watchlist/store.ts';
import { createLogger } from '../../src/logger.ts';
import { startMembershipRelay, type MembershipRelay } from '../../src/monitors/membership.ts';
import { shardPollerId } from '../../src/monitors/shards.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { databaseUrl, newAccount } from '../support/harness.ts';
import { temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from '../support/temporal.ts';

let scratch: ScratchDatabase;
let db: Db;
let client: Client;
let closeTemporal: () => Promise<void>;
let relay: MembershipRelay;
const taskQueue = uniqueTaskQueue('poller-starts');

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_poller_starts', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 4 });
  const temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  client = temporal.client;
  closeTemporal = temporal.close;
  // A minute of trust, so no step of the test outlasts it on a loaded machine: what the relay
  // skips or starts is then decided by what it saw, never by the clock.
  relay = startMembershipRelay({ db, connectionString: scratch.url, client, taskQueue, shardsPerPlatform: 1, log: createLogger('silent'), startedFreshMs: 60_000 });
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await closeTemporal?.();
  await db?.destroy();
  await scratch?.drop();
});

describe("the membership relay's poller starts", { timeout: 60_000 }, () => {
  it('skips a shard it started moments ago, starts one it emptied with its next member, and the reconcile starts any shard with members', async () => {
    const store = new WatchlistStore(db);
    const acct = await newAccount(db);
    const watch = async () => (await store.create(acct.accountId, { ...ITEM_DEFAULTS, website: 'pf_03', event: `https://pf03.example/e/starts-${randomUUID().slice(0, 8)}`, region: 'fr' }, 1_000)).id;
    const poller = client.workflow.getHandle(shardPollerId(taskQueue, 'pf_03', 0));
    const state = async () => {
      const d = await poller.describe();
      return { status: d.status.name, runId: d.runId };
    };
    /** The chain ended, as it does when its shard has no member left. */
    const end = async () => {
      await poller.terminate('the test ends the chain');
      expect((await state()).status).toBe('TERMINATED');
    };

    const a = await watch();
    await relay.drain();
    const first = await state();
    expect(first.status).toBe('RUNNING');

    // Started moments ago: the next batch does not ask Temporal again (the chain stays ended).
    await end();
    const b = await watch();
    await relay.drain();
    expect(await state()).toEqual({ status: 'TERMINATED', runId: first.runId });

    // The reconcile does not trust the relay's memory.
    await relay.reconcile();
    const reconciled = await state();
    expect(reconciled.status).toBe('RUNNING');
    expect(reconciled.runId).not.toBe(first.runId);

    // The relay empties the shard; its chain ends; the next member starts it again at once.
    expect(await store.softDelete(acct.accountId, a)).toBe(true);
    expect(await store.softDelete(acct.accountId, b)).toBe(true);
    await relay.drain();
    expect(Number((await db('monitor_members').count('* as n').first())?.n)).toBe(0);
    await end();
    await watch();
    await relay.drain();
    const again = await state();
    expect(again.status).toBe('RUNNING');
    expect([first.runId, reconciled.runId]).not.toContain(again.runId);
  });
});
