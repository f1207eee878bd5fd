// POST /svc/data/events/add's per-account cap (TRACKING_MAX_EVENTS_PER_ACCOUNT, 3 here), through
// a real gateway on its own scratch database and the run's Temporal server (no worker: these
// tests are about the request). Past the cap: 400 INVALID_REQUEST in spec 7.2's envelope, naming
// the cap, nothing stored. An event the account tracks already takes no new slot; one tracking
// shared by two accounts counts for each; an ended tracking frees its slot. Concurrent adds at
// the cap never pass it, and a property checks random sequences of concurrent adds by two
// accounts against a model the test keeps.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../../db/scratch.ts';
import { endTracking } from '../../../src/market-data/tracking-lifecycle.ts';
import { TemporalEventTracker } from '../../../src/market-data/tracking-service.ts';
import { createRequestPool } from '../../../src/runtime/services.ts';
import { connectTemporal, type TemporalClient } from '../../../temporal/client.ts';
import { call, databaseUrl, newAccount, startTestGateway, testConfig, type TestAccount, type TestGateway } from '../../support/harness.ts';
import { randomAId } from '../../support/market-data-fixtures.ts';
import { temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from '../../support/temporal.ts';

const CAP = 3;
const BASE_URLS = { marketplace_a: 'http://127.0.0.1:8090/marketplace_a', marketplace_b: 'http://127.0.0.1:8090/marketplace_b' };
const CAP_ANSWER = {
  status: 'error',
  code: 'INVALID_REQUEST',
  message: `an account may track at most ${CAP} events at once, and this account tracks ${CAP}; a tracking ends after its event's date`,
};

let scratch: ScratchDatabase;
let db: Db;
let temporal: TemporalClient;
let gateway: TestGateway;

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_events_cap', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 20 });
  temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  const env = { DATABASE_URL: scratch.url, TRACKING_MAX_EVENTS_PER_ACCOUNT: String(CAP) };
  const tracker = new TemporalEventTracker(db, temporal.client, BASE_URLS, { taskQueue: uniqueTaskQueue('events-cap'), scrapeQueue: uniqueTaskQueue('events-cap-ticks'), intervalMs: 60_000 });
  gateway = await startTestGateway({ db, pool: createRequestPool(testConfig(env), scratch.url), env, services: { tracking: tracker } });
}, 60_000);

afterAll(async () => {
  await gateway?.close();
  await temporal?.close();
  await db?.destroy();
  await scratch?.drop();
});

const add = (account: TestAccount, id: string) => call(gateway.url, 'POST', '/svc/data/events/add', { key: account.key, body: { marketplace: 'marketplace_a', event_id: id } });
const liveLinks = async (account: TestAccount): Promise<string[]> =>
  db('tracked_event_accounts as l')
    .join('tracked_events as t', 't.id', 'l.tracked_event_id')
    .where({ 'l.account_id': account.accountId })
    .whereNull('l.ended_at')
    .orderBy('t.external_id')
    .pluck('t.external_id');
const rowOf = (id: string) => db('tracked_events').where({ marketplace: 'marketplace_a', external_id: id }).first();

describe('the cap', { timeout: 60_000 }, () => {
  it('past it: 400 INVALID_REQUEST in the Market Data envelope, naming the cap; nothing stored', async () => {
    const account = await newAccount(db);
    const ids = Array.from({ length: CAP }, randomAId);
    for (const id of ids) expect((await add(account, id)).status).toBe(201);
    const extra = randomAId();
    const refused = await add(account, extra);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual(CAP_ANSWER);
    expect(await rowOf(extra)).toBeUndefined();
    expect(await liveLinks(account)).toEqual([...ids].sort());
    // An event the account tracks already takes no new slot.
    expect((await add(account, ids[0]!)).status).toBe(200);
  });

  it('counts each account on its own: a tracking two accounts share takes a slot of each', async () => {
    const first = await newAccount(db);
    const second = await newAccount(db);
    const shared = randomAId();
    expect((await add(first, shared)).status).toBe(201);
    expect((await add(second, shared)).status).toBe(200);
    for (let i = 1; i < CAP; i++) expect((await add(second, randomAId())).status).toBe(201);
    // The second account is at its cap, also for an event the first one tracks.
    const ofFirst = randomAId();
    expect((await add(first, ofFirst)).status).toBe(201);
    expect((await add(second, ofFirst)).body).toEqual(CAP_ANSWER);
    expect((await liveLinks(first)).length).toBe(2);
    expect((await liveLinks(second)).length).toBe(CAP);
  });

  it('an ended tracking frees its slot; adding it again takes one (and restarts it)', async () => {
    const account = await newAccount(db);
    const ids = Array.from({ length: CAP }, randomAId);
    for (const id of ids) expect((await add(account, id)).status).toBe(201);
    const ended = (await rowOf(ids[1]!))!;
    await db.transaction((trx) => endTracking(trx, Number(ended.id), 'event_passed'));
    expect(await liveLinks(account)).toHaveLength(CAP - 1);
    const other = randomAId();
    expect((await add(account, other)).status).toBe(201);
    // At the cap again: the ended event would be a new slot.
    expect((await add(account, ids[1]!)).body).toEqual(CAP_ANSWER);
    expect(await rowOf(ids[1]!)).toMatchObject({ status: 'ended', end_reason: 'event_passed' });
    await db.transaction(async (trx) => endTracking(trx, Number((await rowOf(other))!.id), 'undated'));
    const restarted = await add(account, ids[1]!);
    expect(restarted.status).toBe(200);
    expect(restarted.body).toMatchObject({ status: 'pending', ended_at: null, end_reason: null });
  });

  it('concurrent adds at one below the cap: exactly one passes', async () => {
    for (const concurrent of [2, 2, 2, 8]) {
      const account = await newAccount(db);
      for (let i = 0; i < CAP - 1; i++) expect((await add(account, randomAId())).status).toBe(201);
      const answers = await Promise.all(Array.from({ length: concurrent }, () => add(account, randomAId())));
      expect(answers.map((a) => a.status).sort()).toEqual([201, ...Array<number>(concurrent - 1).fill(400)]);
      for (const a of answers.filter((x) => x.status === 400)) expect(a.body).toEqual(CAP_ANSWER);
      expect(await liveLinks(account)).toHaveLength(CAP);
    }
  });
});

describe('property: random concurrent adds by two accounts', () => {
  it('never pass the cap, answer past it exactly the envelope, and store exactly what was accepted', { timeout: 240_000 }, async () => {
    // A step: what each account adds at the same moment (an index into the run's events, or nothing).
    const step = fc.record({ a: fc.option(fc.nat(5), { nil: null }), b: fc.option(fc.nat(5), { nil: null }) });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
        const accounts = [await newAccount(db), await newAccount(db)] as const;
        const events = Array.from({ length: 6 }, randomAId);
        // The model: the events each account tracks, and the events that have a tracking.
        const tracks = [new Set<string>(), new Set<string>()];
        const known = new Set<string>();
        for (const { a, b } of steps) {
          const asks = [a, b].flatMap((n, who) => (n === null ? [] : [{ who, id: events[n]! }]));
          const answers = await Promise.all(asks.map(({ who, id }) => add(accounts[who]!, id)));
          const createdNow = new Map<string, number>();
          asks.forEach(({ who, id }, i) => {
            const answer = answers[i]!;
            const mine = tracks[who]!;
            if (!mine.has(id) && mine.size >= CAP) {
              expect(answer.status).toBe(400);
              expect(answer.body).toEqual(CAP_ANSWER);
              return;
            }
            mine.add(id);
            if (known.has(id)) expect(answer.status).toBe(200);
            else {
              expect([200, 201]).toContain(answer.status);
              if (answer.status === 201) createdNow.set(id, (createdNow.get(id) ?? 0) + 1);
            }
            expect(answer.body).toMatchObject({ event_id: id, status: 'pending' });
          });
          // A new event accepted in this step was created by exactly one of its requests.
          for (const { who, id } of asks) if (!known.has(id) && tracks[who]!.has(id)) expect(createdNow.get(id)).toBe(1);
          for (const { who, id } of asks) if (tracks[who]!.has(id)) known.add(id);
          for (const who of [0, 1]) {
            expect(tracks[who]!.size).toBeLessThanOrEqual(CAP);
            expect(await liveLinks(accounts[who]!)).toEqual([...tracks[who]!].sort());
          }
        }
        // Refused events that nobody accepted left no tracking behind.
        const stored = await db('tracked_events').whereIn('external_id', events).pluck('external_id');
        expect(stored.sort()).toEqual([...known].sort());
      }),
      { numRuns: 25 },
    );
  });
});

describe('the OpenAPI document', () => {
  it('states the cap in the 400 answer and the end in the record', async () => {
    const doc = (await call(gateway.url, 'GET', '/openapi.json')).body;
    const op = doc.paths['/svc/data/events/add'].post;
    expect(op.responses['400'].description).toMatch(/TRACKING_MAX_EVENTS_PER_ACCOUNT/);
    const record = doc.components.schemas.TrackedEvent;
    expect(record.properties.status.enum).toContain('ended');
    expect(record.properties.end_reason).toBeDefined();
  });
});
