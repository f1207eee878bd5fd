// POST /svc/data/events/add through a real gateway with a key, on its own scratch database and
// the run's Temporal server (no worker: these tests are about the request, not the tracking):
// the 201 / 200 answers and their schema, every refusal as spec 7.2's INVALID_REQUEST (random
// bodies included: never a 5xx, never a row), URLs of other hosts, and 503 EDGE_UNAVAILABLE
// when Temporal cannot be reached (the new record rolled back).
import { Client, Connection } from '@temporalio/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../../db/scratch.ts';
import { trackedEventSchema } from '../../../src/apis/market-data/events-add.ts';
import { TemporalEventTracker } from '../../../src/market-data/tracking-service.ts';
import { createRequestPool } from '../../../src/runtime/services.ts';
import { connectTemporal, type TemporalClient } from '../../../temporal/client.ts';
import { call, databaseUrl, newAccount, startTestGateway, testConfig, type TestGateway } from '../../support/harness.ts';
import { randomAId } from '../../support/market-data-fixtures.ts';
import { temporalAddress, TEST_NAMESPACE, uniqueTaskQueue } from '../../support/temporal.ts';

const BASE_URLS = { marketplace_a: 'http://127.0.0.1:8090/marketplace_a', marketplace_b: 'http://127.0.0.1:8090/marketplace_b' };

let scratch: ScratchDatabase;
let db: Db;
let temporal: TemporalClient;
let gateway: TestGateway;
let unreachable: TestGateway;
let untracked: TestGateway;
let key: string;
const unreachableConnection = Connection.lazy({ address: '127.0.0.1:1' });

beforeAll(async () => {
  scratch = await createScratchDatabase('tm_events_add', databaseUrl());
  db = createDb({ connectionString: scratch.url, poolMax: 10 });
  temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  const config = testConfig({ DATABASE_URL: scratch.url });
  const gatewayFor = (tracking?: TemporalEventTracker) =>
    startTestGateway({ db, pool: createRequestPool(config, scratch.url), env: { DATABASE_URL: scratch.url }, services: tracking ? { tracking } : {} });
  const tracker = (client: Client) => new TemporalEventTracker(db, client, BASE_URLS, { taskQueue: uniqueTaskQueue('events-add'), scrapeQueue: uniqueTaskQueue('events-add-ticks'), intervalMs: 60_000 });
  gateway = await gatewayFor(tracker(temporal.client));
  unreachable = await gatewayFor(tracker(new Client({ connection: unreachableConnection, namespace: TEST_NAMESPACE })));
  untracked = await gatewayFor();
  ({ key } = await newAccount(db));
}, 60_000);

afterAll(async () => {
  for (const g of [gateway, unreachable, untracked]) await g?.close();
  await unreachableConnection.close().catch(() => {});
  await temporal?.close();
  await db?.destroy();
  await scratch?.drop();
});

const add = (body: unknown, g = gateway) => call(g.url, 'POST', '/svc/data/events/add', { key, body });
const rows = async () => Number((await db('tracked_events').count({ n: '*' }).first())!.n);

describe('answers', () => {
  it('201 with a pending record when it starts tracking, 200 with the same record after', async () => {
    const id = randomAId();
    const first = await add({ marketplace: 'marketplace_a', event_id: id });
    expect(first.status).toBe(201);
    const record = trackedEventSchema.parse(first.body);
    expect(record).toMatchObject({ marketplace: 'marketplace_a', event_id: id, status: 'pending', catalog_event_id: null, scrape_count: 0 });
    const second = await add({ marketplace: 'marketplace_a', url: `https://www.marketplace-a.example/event/${id}` });
    expect(second.status).toBe(200);
    expect(second.body).toEqual(first.body);
    // Temporal holds one tracking for it, on the tracker's queue.
    const description = await temporal.client.workflow.getHandle(`track:marketplace_a:${id}`).describe();
    expect(description.status.name).toBe('RUNNING');
  });

  it('takes a URL below the configured base URL, and a marketplace B id', async () => {
    const a = randomAId();
    expect((await add({ marketplace: 'marketplace_a', url: `${BASE_URLS.marketplace_a}/event/${a}` })).body).toMatchObject({ event_id: a });
    const b = await add({ marketplace: 'marketplace_b', event_id: 'ZZ00TEST42' });
    expect([200, 201]).toContain(b.status);
    expect(b.body).toMatchObject({ marketplace: 'marketplace_b', event_id: 'ZZ00TEST42', event_url: 'https://www.marketplace-b.example/event/ZZ00TEST42' });
  });

  it('is documented in the OpenAPI document from the same schemas', async () => {
    const doc = (await call(gateway.url, 'GET', '/openapi.json')).body;
    const op = doc.paths['/svc/data/events/add'].post;
    expect(op.operationId).toBe('addEvent');
    expect(op['x-credits']).toBe(1);
    expect(op.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/AddEventRequest' });
    expect(op.responses['201'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/TrackedEvent' });
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '201', '400', '503']));
    expect(doc.components.schemas.AddEventRequest.properties.marketplace.enum).toEqual(['marketplace_a', 'marketplace_b']);
  });
});

describe('refusals', () => {
  const A = { marketplace: 'marketplace_a' };
  it.each([
    ['an empty body', undefined, /JSON object/],
    ['an array', [A], /JSON object/],
    ['no marketplace', { event_id: 'E-1' }, /marketplace is required/],
    ['marketplace C (not trackable)', { marketplace: 'marketplace_c', event_id: '123456' }, /marketplace_a, marketplace_b/],
    ['a platform key', { marketplace: 'pf_01', event_id: 'E-1' }, /marketplace/],
    ['neither event_id nor url', A, /exactly one of event_id and url/],
    ['both event_id and url', { ...A, event_id: 'E-1', url: 'https://www.marketplace-a.example/event/E-1' }, /exactly one/],
    ['a number as event_id', { ...A, event_id: 104729 }, /event_id must be a string/],
    ['an A id without its prefix', { ...A, event_id: '104729' }, /E-<digits>/],
    ['an A id in the form of B', { ...A, event_id: '0B005F2A9B1E4D2C' }, /E-<digits>/],
    ['a B id that is too short', { marketplace: 'marketplace_b', event_id: 'abc' }, /6 to 32/],
    ['an unknown field', { ...A, event_id: 'E-1', region: 'uk' }, /unknown field: region/],
    ['a URL of another host', { ...A, url: 'https://evil.example/event/E-1' }, /host 'evil.example'/],
    ['a URL of an internal address', { ...A, url: 'http://169.254.169.254/latest/meta-data' }, /host '169.254.169.254'/],
    ['a URL of the simulator on another port', { ...A, url: 'http://127.0.0.1:9999/marketplace_a/event/E-1' }, /host '127.0.0.1:9999'/],
    ['a URL of the other marketplace', { ...A, url: 'https://www.marketplace-b.example/event/E-1' }, /host/],
    ['a file URL', { ...A, url: 'file:///etc/passwd' }, /http or https/],
    ['an A artist page', { ...A, url: 'https://www.marketplace-a.example/artist/aurora-skies' }, /path/],
  ])('refuses %s with 400 INVALID_REQUEST', async (_label, body, message) => {
    const before = await rows();
    const res = await add(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 'error', code: 'INVALID_REQUEST', message: expect.stringMatching(message) });
    expect(await rows()).toBe(before);
  });

  it('refuses a body that is not JSON, and one over the size limit', async () => {
    const bad = await call(gateway.url, 'POST', '/svc/data/events/add', { key, raw: '{"marketplace":', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringMatching(/not valid JSON/) });
    const big = await add({ marketplace: 'marketplace_a', event_id: 'E-1', padding: 'x'.repeat(1_100_000) });
    expect(big.status).toBe(400);
    expect(big.body.message).toMatch(/larger than/);
  });

  it('random bodies are never a 5xx and never leave a row', async () => {
    const before = await rows();
    const notAnId = fc.string({ maxLength: 40 }).filter((s) => !/^\s*E-[1-9][0-9]{0,14}\s*$/.test(s) && !/^\s*[A-Za-z0-9]{6,32}\s*$/.test(s));
    const body = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.record(
        {
          marketplace: fc.oneof(fc.constantFrom('marketplace_a', 'marketplace_b', 'marketplace_c', ''), fc.jsonValue({ maxDepth: 1 })),
          event_id: fc.oneof(notAnId, fc.jsonValue({ maxDepth: 1 })),
          url: fc.oneof(fc.webUrl(), notAnId.map((s) => `https://www.marketplace-a.example/event/${s}`), fc.constant('http://127.0.0.1:5432/')),
          extra: fc.jsonValue({ maxDepth: 1 }),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const res = await add(b);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ status: 'error', code: 'INVALID_REQUEST' });
        expect(typeof res.body.message).toBe('string');
      }),
      { numRuns: 150 },
    );
    expect(await rows()).toBe(before);
  });
});

describe('backend unavailable', () => {
  it('answers 503 EDGE_UNAVAILABLE when Temporal cannot be reached, and keeps no record', { timeout: 30_000 }, async () => {
    const id = randomAId();
    const res = await add({ marketplace: 'marketplace_a', event_id: id }, unreachable);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'error', code: 'EDGE_UNAVAILABLE', message: expect.any(String) });
    expect(await db('tracked_events').where({ external_id: id }).first()).toBeUndefined();
  });

  it('answers 503 without a tracking service, after checking the body', async () => {
    expect((await add({ marketplace: 'marketplace_a', event_id: randomAId() }, untracked)).body).toMatchObject({ code: 'EDGE_UNAVAILABLE' });
    expect((await add({ marketplace: 'marketplace_a', event_id: 'nope' }, untracked)).status).toBe(400);
  });
});
