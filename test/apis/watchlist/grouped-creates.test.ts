// Concurrent creates written together (issue 40: src/apis/watchlist/store.ts, one transaction in
// flight per account, two at once in all, the creates that arrive meanwhile forming the next,
// whichever accounts they are of). The
// ground truth is a model written down by the test before the creates are sent: each create, in
// the order it was made, checked against the cap and its webhook as if it had a transaction of its
// own after the one before. Every answer, the rows stored, their ids' order and the change log
// must be what the model says, whatever the mix of accounts, caps and webhooks.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TooManyItemsError, UnknownWebhookError, WatchlistStore } from '../../../src/apis/watchlist/store.ts';
import { createItemSchema, type CreateItem } from '../../../src/apis/watchlist/schema.ts';
import { createDb } from '../../../db/connection.ts';
import { databaseUrl, newAccount, startTestGateway, type TestGateway } from '../../support/harness.ts';
import { changesOf, pf03Event, rowCount } from './helpers.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway();
});

afterAll(async () => {
  await gw?.close();
});

const RUNS = Number(process.env.GROUPED_CREATE_RUNS ?? 25);

type Hook = 'active' | 'inactive' | 'missing' | 'none';

async function webhookOf(accountId: number, active: boolean): Promise<number> {
  const [row] = await gw.db('webhooks').insert({ account_id: accountId, kind: 'discord', url_sealed: 'sealed', active, created_at: new Date(), updated_at: new Date() }).returning('id');
  return Number((row as { id: string }).id);
}

/** A create's fields as the route hands them to the store: parsed, the server's defaults filled in. */
function fieldsOf(slug: string, webhook: number | null): CreateItem {
  return createItemSchema.parse({ website: 'pf_03', event: pf03Event(slug), region: 'us', ...(webhook === null ? {} : { webhook_setting_id: webhook }) });
}

describe("an account's concurrent creates", () => {
  it('answer, store and log exactly what creating them one after another in the order they were made would', { timeout: 240_000 }, async () => {
    const store = new WatchlistStore(gw.db);
    let seen = { grouped: 0, refusedCap: 0, refusedHook: 0 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            held: fc.nat({ max: 3 }),
            cap: fc.integer({ min: 1, max: 8 }),
            creates: fc.array(fc.constantFrom<Hook>('none', 'none', 'active', 'inactive', 'missing'), { minLength: 1, maxLength: 12 }),
          }),
          { minLength: 1, maxLength: 3 },
        ),
        async (accounts) => {
          const plans = [];
          for (const a of accounts) {
            const acct = await newAccount(gw.db);
            const active = await webhookOf(acct.accountId, true);
            const inactive = await webhookOf(acct.accountId, false);
            const hooks: Record<Hook, number | null> = { active, inactive, missing: inactive + 1_000_000, none: null };
            for (let i = 0; i < Math.min(a.held, a.cap); i++) await store.create(acct.accountId, fieldsOf(`held-${i}`, null), a.cap);
            // The model: in the order made, each refused past the cap, then for its webhook.
            let held = Math.min(a.held, a.cap);
            const expected = a.creates.map((hook) => {
              if (held >= a.cap) return 'cap';
              if (hook === 'inactive' || hook === 'missing') return 'hook';
              held++;
              return 'created';
            });
            plans.push({ acct, a, hooks, expected, before: Math.min(a.held, a.cap) });
          }
          // Every create of every account made at once, interleaved across accounts.
          const longest = Math.max(...plans.map((p) => p.a.creates.length));
          const calls: { plan: (typeof plans)[number]; k: number; answer: Promise<unknown> }[] = [];
          for (let k = 0; k < longest; k++) {
            for (const plan of plans) {
              const hook = plan.a.creates[k];
              if (hook === undefined) continue;
              const answer = store.create(plan.acct.accountId, fieldsOf(`c-${k}`, plan.hooks[hook]), plan.a.cap).then(
                (item) => item,
                (err: unknown) => err,
              );
              calls.push({ plan, k, answer });
            }
          }
          const answers = await Promise.all(calls.map((c) => c.answer));
          for (const plan of plans) {
            const mine = calls.map((c, i) => ({ c, answer: answers[i] })).filter(({ c }) => c.plan === plan);
            const got = mine.map(({ answer }) =>
              answer instanceof TooManyItemsError ? 'cap' : answer instanceof UnknownWebhookError ? 'hook' : (answer as { id?: number }).id !== undefined ? 'created' : String(answer),
            );
            expect(got).toEqual(plan.expected);
            const created = mine.filter((_, i) => plan.expected[i] === 'created').map(({ answer }) => answer as { id: number; event: string; webhook_setting_id: number | null; check_status: string });
            // Ids follow the order the creates were made; each answer is its own create's.
            const ids = created.map((c) => c.id);
            expect(ids).toEqual([...ids].sort((x, y) => x - y));
            mine.forEach(({ c, answer }, i) => {
              if (plan.expected[i] !== 'created') return;
              const item = answer as { event: string; webhook_setting_id: number | null; check_status: string };
              expect(item.event).toBe(pf03Event(`c-${c.k}`));
              expect(item.webhook_setting_id).toBe(plan.hooks[plan.a.creates[c.k]!]);
              expect(item.check_status).toBe('pending');
            });
            // Stored once each, with one change row each, in id order.
            expect(await rowCount(gw.db, plan.acct.accountId)).toBe(plan.before + created.length);
            const changes = await changesOf(gw.db, { account_id: plan.acct.accountId });
            expect(changes.slice(plan.before).map((ch) => Number(ch.item_id))).toEqual(ids);
            if (plan.expected.includes('cap')) seen.refusedCap++;
            if (plan.expected.includes('hook')) seen.refusedHook++;
            if (created.length > 1) seen.grouped++;
          }
        },
      ),
      { numRuns: RUNS },
    );
    // Both kinds of refusal, and groups of more than one create, were met.
    expect(seen.grouped).toBeGreaterThan(0);
    expect(seen.refusedCap).toBeGreaterThan(0);
    expect(seen.refusedHook).toBeGreaterThan(0);
    seen = { grouped: 0, refusedCap: 0, refusedHook: 0 };
  });

  it("are written by fewer transactions than creates, one account's or many accounts'", async () => {
    // A handle of the test's own, so no other work of the gateway's is counted with the creates.
    const db = createDb({ connectionString: databaseUrl(), poolMax: 4, applicationName: 'grouped-creates-test' });
    const store = new WatchlistStore(db);
    const acct = await newAccount(gw.db);
    const many = await Promise.all(Array.from({ length: 16 }, () => newAccount(gw.db)));
    let begun = 0;
    const onQuery = (q: { sql: string }) => void (/^begin/i.test(q.sql) && begun++);
    db.on('query', onQuery);
    let manyBegun = 0;
    try {
      await Promise.all(Array.from({ length: 16 }, (_, i) => store.create(acct.accountId, fieldsOf(`together-${i}`, null), 100)));
      manyBegun = -begun;
      await Promise.all(many.map((a, i) => store.create(a.accountId, fieldsOf(`accounts-${i}`, null), 100)));
      manyBegun += begun;
    } finally {
      db.off('query', onQuery);
      await db.destroy();
    }
    expect(await rowCount(gw.db, acct.accountId)).toBe(16);
    for (const a of many) expect(await rowCount(gw.db, a.accountId)).toBe(1);
    // One account's: the first goes alone, the 15 that arrive while it is out go together (its
    // account has one transaction out at a time): 2 transactions, where 16 creates each alone took 16.
    expect(begun - manyBegun).toBe(2);
    // Sixteen accounts' one each: two go alone at once, the 14 that arrive meanwhile together.
    expect(manyBegun).toBe(3);
  });

  it("from several gateways at once, with groups that share accounts, hold each account's cap exactly and never deadlock", { timeout: 120_000 }, async () => {
    // Three stores with pools of their own stand for three gateway processes: each has its own
    // groups out, which share accounts with the others' and meet them in every order.
    const dbs = [0, 1, 2].map((i) => createDb({ connectionString: databaseUrl(), poolMax: 4, applicationName: `grouped-creates-${i}` }));
    const stores = dbs.map((db) => new WatchlistStore(db));
    const CAP = 3;
    try {
      for (let round = 0; round < 6; round++) {
        const accounts = await Promise.all(Array.from({ length: 6 }, () => newAccount(gw.db)));
        // Each store asks 4 creates of each account (12 an account in all, against a cap of 3),
        // the accounts in a different order in each store.
        const calls = stores.flatMap((store, si) => {
          const order = [...accounts].sort((a, b) => ((a.accountId * (si + 3)) % 7) - ((b.accountId * (si + 3)) % 7) || a.accountId - b.accountId);
          return Array.from({ length: 4 }, (_, k) => order.map((a) => ({ store, accountId: a.accountId, k }))).flat();
        });
        const answers = await Promise.all(
          calls.map((c) =>
            c.store.create(c.accountId, fieldsOf(`shared-${round}-${c.k}`, null), CAP).then(
              () => 'created',
              (err: unknown) => (err instanceof TooManyItemsError ? 'cap' : err),
            ),
          ),
        );
        // Nothing but a create or a refusal for the cap (a deadlock would be an error here).
        expect(answers.filter((a) => a !== 'created' && a !== 'cap')).toEqual([]);
        for (const a of accounts) {
          const mine = answers.filter((_, i) => calls[i]!.accountId === a.accountId);
          expect(mine.filter((x) => x === 'created')).toHaveLength(CAP);
          expect(await rowCount(gw.db, a.accountId)).toBe(CAP);
        }
      }
    } finally {
      await Promise.all(dbs.map((db) => db.destroy()));
    }
  });

  it("answer each create's health with its own account's service: a served and an unserved account in one group", async () => {
    const store = new WatchlistStore(gw.db);
    const [served, unserved, first, second] = await Promise.all([
      newAccount(gw.db),
      newAccount(gw.db, { status: 'past_due' }),
      newAccount(gw.db),
      newAccount(gw.db),
    ]);
    // Two creates take both groups out; the four that follow go together in one group.
    const ahead = [first!, second!].map((a) => store.create(a.accountId, fieldsOf('ahead', null), 100));
    const mixed = await Promise.all(
      [served!, unserved!, served!, unserved!].map((a, i) => store.create(a.accountId, fieldsOf(`service-${i}`, null), 100)),
    );
    await Promise.all(ahead);
    expect(new Set(mixed.map((m) => m.created_at)).size).toBe(1);
    expect(mixed.map((m) => m.check_status)).toEqual(['pending', 'paused', 'pending', 'paused']);
  });

  it("refuse only the create whose row the database refuses: the others of its group, its account's and other accounts', are stored, once", async () => {
    const store = new WatchlistStore(gw.db);
    const [acct, other, first, second] = await Promise.all([0, 1, 2, 3].map(() => newAccount(gw.db)));
    // seat_quantity past int4: a row the database refuses (22003) that validation would have
    // stopped at the API; here it stands for any one row that fails its group.
    const bad = { ...fieldsOf('bad', null), seat_quantity: 2 ** 40 } as CreateItem;
    // Two creates take both groups out; the rest, two accounts', then go together in one group.
    const ahead = [first!, second!].map((a) => store.create(a.accountId, fieldsOf('ahead', null), 100));
    const answers = [0, 1, 2, 3, 4, 5].map((i) => store.create(acct!.accountId, i === 3 ? bad : fieldsOf(`good-${i}`, null), 100).then((item) => item, (err: unknown) => err));
    const others = [0, 1, 2].map((i) => store.create(other!.accountId, fieldsOf(`other-${i}`, null), 100));
    await Promise.all(ahead);
    const got = await Promise.all(answers);
    expect(got[3]).toMatchObject({ code: '22003' });
    const stored = got.filter((_, i) => i !== 3) as { id: number; event: string }[];
    expect(stored.map((s) => s.event)).toEqual([0, 1, 2, 4, 5].map((i) => pf03Event(`good-${i}`)));
    expect(await rowCount(gw.db, acct!.accountId)).toBe(5);
    expect((await changesOf(gw.db, { account_id: acct!.accountId })).map((c) => Number(c.item_id))).toEqual(stored.map((s) => s.id));
    // The other account's creates are stored once each, in order, and together: one statement's
    // timestamp (each of the failing account's was tried alone, a statement each).
    const theirs = await Promise.all(others);
    expect(theirs.map((t) => t.event)).toEqual([0, 1, 2].map((i) => pf03Event(`other-${i}`)));
    expect(await rowCount(gw.db, other!.accountId)).toBe(3);
    expect((await changesOf(gw.db, { account_id: other!.accountId })).map((c) => Number(c.item_id))).toEqual(theirs.map((t) => t.id));
    expect(new Set(theirs.map((t) => t.created_at)).size).toBe(1);
    expect(new Set(stored.map((s) => (s as unknown as { created_at: string }).created_at)).size).toBe(5);
  });
});
