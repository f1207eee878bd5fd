// The bound on test pings (src/apis/webhooks/deliveries.ts, issue 38) as a property, on real
// PostgreSQL with no dispatcher: whatever the sequence of tests (several at once), outcomes of
// their attempts (delivered, failed, parked), retries of finished pings and lapses of the
// account, no webhook ever has more than TEST_DELIVERIES_PENDING_MAX pings pending; a test is
// refused exactly when the bound is reached (or the account is not served), and a refused one
// stores nothing. The end-to-end behaviour through the gateway is
// test/apis/webhooks/test-deliveries.test.ts.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { DeliveryStore, TEST_DELIVERIES_PENDING_MAX as MAX } from '../../src/apis/webhooks/deliveries.ts';
import { databaseUrl } from '../support/harness.ts';

let scratch: ScratchDatabase;
let db: Db;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_webhook_tests', databaseUrl());
  // Room for a burst of tests at once: each holds a connection while it waits for the bound's lock.
  db = createDb({ connectionString: scratch.url, poolMax: 8 });
});

afterAll(async () => {
  await db?.destroy();
  await scratch?.drop();
});

type Op =
  | { op: 'test'; hook: 0 | 1; at_once: number }
  | { op: 'finish'; hook: 0 | 1; pick: number; state: 'delivered' | 'failed' }
  | { op: 'park'; hook: 0 | 1; pick: number }
  | { op: 'retry'; hook: 0 | 1; pick: number }
  | { op: 'served'; served: boolean };

const hookArb = fc.constantFrom(0 as const, 1 as const);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('test' as const), hook: hookArb, at_once: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('finish' as const), hook: hookArb, pick: fc.nat(), state: fc.constantFrom('delivered' as const, 'failed' as const) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('park' as const), hook: hookArb, pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('retry' as const), hook: hookArb, pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('served' as const), served: fc.boolean() }) },
);

async function newWebhook(accountId: number): Promise<number> {
  const [hook] = await db('webhooks').insert({ account_id: accountId, kind: 'discord', url_sealed: 'sealed', active: true, created_at: new Date(), updated_at: new Date() }).returning('id');
  return Number(hook.id);
}

const pingsOf = async (webhookId: number, state: 'pending' | 'finished') => {
  const q = db('webhook_deliveries').where({ webhook_id: webhookId, type: 'ping' }).orderBy('id').select('id');
  if (state === 'pending') q.where({ state: 'pending' });
  else q.whereNot({ state: 'pending' });
  return (await q).map((r) => Number(r.id));
};

describe('test pings per webhook', () => {
  it(`for any sequence of tests, outcomes, retries and lapses: at most ${MAX} pending per webhook, refused exactly past it`, async () => {
    const store = new DeliveryStore(db);
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        const [account] = await db('accounts').insert({ name: 'tests' }).returning('id');
        const accountId = Number(account.id);
        await db('account_service').insert({ account_id: accountId, served: true });
        const hooks = [await newWebhook(accountId), await newWebhook(accountId)];
        let served = true;
        for (const o of ops) {
          if (o.op === 'served') {
            served = o.served;
            await db('account_service').where({ account_id: accountId }).update({ served });
            continue;
          }
          const hook = hooks[o.hook]!;
          const pending = await pingsOf(hook, 'pending');
          if (o.op === 'test') {
            const results = await Promise.all(Array.from({ length: o.at_once }, () => store.ping(accountId, hook)));
            const accepted = results.filter((r) => 'id' in r);
            const refused = results.filter((r) => 'refused' in r);
            if (!served) {
              expect(refused).toEqual(results.map(() => ({ refused: 'not_served' })));
            } else {
              expect(accepted).toHaveLength(Math.min(o.at_once, MAX - pending.length));
              // Each refusal names the pending pings it found: exactly the bound, the ones before and the ones accepted.
              const now = await pingsOf(hook, 'pending');
              for (const r of refused) expect(r).toEqual({ refused: 'too_many_pending', pending: now });
            }
          } else if (o.op === 'finish' || o.op === 'park') {
            if (pending.length === 0) continue;
            const id = pending[o.pick % pending.length]!;
            if (o.op === 'finish') await db('webhook_deliveries').where({ id }).update({ state: o.state });
            else await db('webhook_deliveries').where({ id }).update({ parked_at: db.fn.now(), next_attempt_at: null, dispatched: true });
          } else {
            const finished = await pingsOf(hook, 'finished');
            if (finished.length === 0) continue;
            const result = await store.retry(accountId, hook, finished[o.pick % finished.length]!);
            expect(result).toEqual(pending.length < MAX ? 'retried' : { refused: 'too_many_pending', pending });
          }
          for (const h of hooks) expect((await pingsOf(h, 'pending')).length).toBeLessThanOrEqual(MAX);
        }
      }),
      { numRuns: 40 },
    );
  });
});
