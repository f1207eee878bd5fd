// Event tracking end to end, all real (PostgreSQL, Temporal, the simulator's marketplaces, the
// gateway with a key): POST /svc/data/events/add starts a trackEvent workflow whose ticks write
// the catalog, statistics and search rows; changing the marketplace's data through the control
// API changes the statistics; adding again (one by one or all at once) finds the same tracking;
// an unknown event ends the tracking as failed, a failing marketplace is retried.
import { describe, expect, it } from 'vitest';
import { trackedEventSchema } from '../../src/apis/market-data/events-add.ts';
import { trackingWorkflowId } from '../../src/market-data/tracking-ref.ts';
import { trackingLimits } from '../../src/market-data/tracking-lifecycle.ts';
import { readTickState } from '../../src/market-data/tracking-store.ts';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTrackingActivities } from '../../activities/tracking.ts';
import { createLogger } from '../../src/logger.ts';
import { createHttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { call } from '../support/harness.ts';
import { hits } from '../support/simulator.ts';
import { randomAId, randomBId } from '../support/market-data-fixtures.ts';
import { eventually, useTrackingStack } from './tracking-stack.ts';

const stack = useTrackingStack({ intervalMs: 300 });

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

async function latestSnapshot(eventId: number) {
  return stack.db('ma_stats_snapshots').where({ event_id: eventId }).orderBy('id', 'desc').first();
}

async function searchRow(eventId: number) {
  return stack.db('event_search').where({ event_id: eventId }).first();
}

/** A Market Data read endpoint through the gateway, with the stack's key. */
async function read(path: string, body?: unknown) {
  return call(stack.gateway.url, body === undefined ? 'GET' : 'POST', path, { key: stack.key, body });
}

// Real workflows and a worker per file: minutes of slack under a full parallel run.
describe('tracking a marketplace A event', { timeout: 120_000 }, () => {
  it('writes the catalog, a snapshot, sales, daily rows, the histogram and the search row, and follows changes', async () => {
    const id = randomAId();
    const num = Number(id.slice(2));
    const now = Date.now();
    const listings = [
      { section: 'Floor', quantity: 4, price: 50 },
      { section: 'Balcony', row: 'B', quantity: 2, price: 35.5 },
    ];
    const sales = [
      { id: 'S-1', sold_at: iso(now - 30 * HOUR), section: 'Floor', quantity: 2, price: 40 },
      { id: 'S-2', sold_at: iso(now - 2 * HOUR), section: 'Balcony', quantity: 1, price: 60 },
    ];
    await stack.put('marketplace_a', id, {
      name: 'Tracked Concert',
      currency: 'GBP',
      category: 'Tracked Concerts',
      venue: { name: 'Tracking Hall', city: 'Leeds', country: 'United Kingdom', country_code: 'GB' },
      artist: { name: 'The Trackers', slug: `the-trackers-${num}` },
      marketplace_c_event_id: '55501',
      listings,
      sales,
    });

    const added = await stack.add({ marketplace: 'marketplace_a', event_id: id });
    expect(added.status).toBe(201);
    expect(() => trackedEventSchema.parse(added.body)).not.toThrow();
    expect(added.body).toMatchObject({
      marketplace: 'marketplace_a',
      event_id: id,
      event_url: `https://www.marketplace-a.example/event/${id}`,
      catalog_event_id: null,
      status: 'pending',
      last_scraped_at: null,
      scrape_count: 0,
      last_error: null,
    });

    const first = await stack.scraped('marketplace_a', id);
    expect(first.event_id).toBe(num);
    expect(first.workflow_id).toBe(trackingWorkflowId('marketplace_a', id));
    const event = await stack
      .db('events as e')
      .leftJoin('venues as v', 'v.id', 'e.venue_id')
      .leftJoin('artists as a', 'a.id', 'e.artist_id')
      .leftJoin('categories as c', 'c.id', 'e.category_id')
      .where('e.id', num)
      .first('e.name', 'e.marketplace_a_url', 'e.marketplace_c_event_url', 'v.name as venue', 'v.country_code', 'a.url as artist_url', 'c.name as category');
    expect(event).toEqual({
      name: 'Tracked Concert',
      marketplace_a_url: `https://www.marketplace-a.example/event/${id}`,
      marketplace_c_event_url: 'https://www.marketplace-c.example/tickets/55501',
      venue: 'Tracking Hall',
      country_code: 'GB',
      artist_url: `https://www.marketplace-a.example/artist/the-trackers-${num}`,
      category: 'Tracked Concerts',
    });
    expect(await stack.db('ma_sales').where({ event_id: num }).orderBy('sale_ref').pluck('sale_ref')).toEqual(['S-1', 'S-2']);
    expect(await latestSnapshot(num)).toMatchObject({
      currency: 'GBP',
      tickets_sold: 3,
      tickets_sold_24h: 1,
      listings_sold: 2,
      available_tickets: 6,
      listings_available: 2,
      get_in_price: '35.50',
      highest_sale_price: '60.00',
      total_volume: '140.00',
      average_ticket_price_sold: '46.67',
      tickets_sold_24h_percentage: '50.00',
    });
    const days = await stack.db('ma_daily_stats').where({ event_id: num }).orderBy('stat_date').select();
    expect(days.length).toBeGreaterThanOrEqual(2);
    expect(days.at(-1)).toMatchObject({ tickets_sold: 3, available_tickets: 6, listings_available: 2 });
    expect(days[0]).toMatchObject({ tickets_sold: 2, tickets_sold_24h: 2, available_tickets: null });
    const histogram = await stack.db('ma_price_histograms').where({ event_id: num }).first();
    expect(histogram).toMatchObject({ min: '40.00', max: '60.00', currency: 'GBP' });
    expect(histogram.data.reduce((n: number, b: { tickets_sold: number }) => n + b.tickets_sold, 0)).toBe(3);
    expect(await searchRow(num)).toMatchObject({ event_name: 'Tracked Concert', tickets_sold: 3, tickets_sold_24h: 1, available_tickets: 6, venue_country_code: 'GB', artist_name: 'The Trackers' });

    const again = await stack.add({ marketplace: 'marketplace_a', url: `https://www.marketplace-a.example/event/${id}` });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: added.body.id, status: 'active', catalog_event_id: num });
    expect(again.body.last_scraped_at).not.toBeNull();

    // Three tickets sell at 70 (one of them from the Floor listing), the Floor listing shrinks.
    await stack.put('marketplace_a', id, {
      name: 'Tracked Concert',
      currency: 'GBP',
      category: 'Tracked Concerts',
      venue: { name: 'Tracking Hall', city: 'Leeds', country: 'United Kingdom', country_code: 'GB' },
      artist: { name: 'The Trackers', slug: `the-trackers-${num}` },
      listings: [{ ...listings[0], quantity: 1 }, listings[1]],
      sales: [...sales, { id: 'S-3', sold_at: iso(Date.now()), section: 'Floor', quantity: 3, price: 70 }],
    });
    const changed = await eventually(async () => {
      const s = await latestSnapshot(num);
      return s.tickets_sold === 6 ? s : undefined;
    });
    expect(changed).toMatchObject({ tickets_sold_24h: 4, available_tickets: 3, highest_sale_price: '70.00', total_volume: '350.00' });
    expect(await stack.db('ma_sales').where({ event_id: num }).count({ n: '*' }).first()).toEqual({ n: 3 });
    expect(await stack.db('ma_price_histograms').where({ event_id: num }).first()).toMatchObject({ min: '40.00', max: '70.00' });
    expect(await searchRow(num)).toMatchObject({ tickets_sold: 6, tickets_sold_24h: 4, available_tickets: 3 });
    expect((await stack.db('ma_daily_stats').where({ event_id: num }).orderBy('stat_date', 'desc').first()).tickets_sold).toBe(6);

    // More ticks of the same page: nothing counted twice, one snapshot per written tick.
    const before = (await stack.record('marketplace_a', id))!;
    await stack.scraped('marketplace_a', id, before.scrape_count + 3);
    expect(await stack.db('ma_sales').where({ event_id: num }).count({ n: '*' }).first()).toEqual({ n: 3 });
    const { rows } = await stack.db.raw(
      'SELECT t.scrape_count, (SELECT count(*) FROM ma_stats_snapshots s WHERE s.event_id = t.event_id) AS snapshots FROM tracked_events t WHERE t.external_id = ?',
      [id],
    );
    expect(rows[0].snapshots).toBe(rows[0].scrape_count);
    expect((await latestSnapshot(num)).tickets_sold).toBe(6);

    const res = await read(`/svc/data/marketplace_a/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.summary.tickets_sold).toBe(6);
    expect(res.body.event.marketplace_a_event_id).toBe(num);
    const found = await read('/svc/data/search', { query: 'Tracked Concert' });
    expect(found.status).toBe(200);
    expect(found.body.hits).toContainEqual(expect.objectContaining({ event_id: num, tickets_sold: 6, venue_country_code: 'GB' }));
  });
});

describe('tracking a marketplace B event', { timeout: 120_000 }, () => {
  it('writes scrape runs with their sections and offers and a statistics row per run', async () => {
    const id = randomBId();
    const page = (floorSold: number) => ({
      name: 'Tracked Festival',
      region: 'de',
      currency: 'EUR',
      category: 'Festivals',
      venue: { name: 'Tracking Park', city: 'Hamburg', country: 'Germany', country_code: 'DE' },
      sections: [
        { name: 'Wiese', capacity: 1000, available: 1000 - floorSold, sold: floorSold },
        { name: 'Tribüne', capacity: 200, available: 50, sold: 150 },
      ],
      offers: [
        { name: 'Tagesticket', stock: 1000 - floorSold, price: 59, face_price: 52 },
        { name: 'Resale', stock: 10, price: 80.5, face_price: 70, type: 'resale' },
        { name: 'Platin', stock: 0, price: 250, face_price: 230, type: 'platinum' },
      ],
    });
    await stack.put('marketplace_b', id, page(600));
    const added = await stack.add({ marketplace: 'marketplace_b', url: `https://www.marketplace-b.example/tracked-festival-hamburg/event/${id}` });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ event_id: id, event_url: `https://www.marketplace-b.example/event/${id}`, status: 'pending' });

    const first = await stack.scraped('marketplace_b', id);
    const eventId = Number(first.event_id);
    expect(eventId).toBeGreaterThanOrEqual(1_000_000_000_000);
    expect(await stack.db('events').where({ id: eventId }).first('name', 'marketplace_b_event_id', 'capacity')).toEqual({ name: 'Tracked Festival', marketplace_b_event_id: id, capacity: 1200 });
    const run = await stack.db('mb_scrape_runs').where({ event_id: eventId }).orderBy('id', 'desc').first();
    expect(run.region).toBe('de');
    expect(await stack.db('mb_section_stats').where({ run_id: run.id }).orderBy('id').select('section_name', 'capacity', 'available_stock', 'sold_amount')).toEqual([
      { section_name: 'Wiese', capacity: 1000, available_stock: 400, sold_amount: 600 },
      { section_name: 'Tribüne', capacity: 200, available_stock: 50, sold_amount: 150 },
    ]);
    expect(await stack.db('mb_offer_stats').where({ run_id: run.id }).orderBy('id').select('offer_name', 'offer_stock', 'average_price_fees', 'average_price_no_fees', 'offer_type', 'currency')).toEqual([
      { offer_name: 'Tagesticket', offer_stock: 400, average_price_fees: '59.00', average_price_no_fees: '52.00', offer_type: 1, currency: 'EUR' },
      { offer_name: 'Resale', offer_stock: 10, average_price_fees: '80.50', average_price_no_fees: '70.00', offer_type: 2, currency: 'EUR' },
      { offer_name: 'Platin', offer_stock: 0, average_price_fees: '250.00', average_price_no_fees: '230.00', offer_type: 3, currency: 'EUR' },
    ]);
    const history = await stack.db('mb_statistics_history').where({ run_id: run.id }).first();
    expect(history).toMatchObject({ tickets_sold: 750, available_tickets: 450, listings_available: 2, capacity: 1200, lowest_price: '59.00', highest_price: '80.50', average_ticket_price_platinum: null, currency: 'EUR' });
    expect(await searchRow(eventId)).toMatchObject({ event_name: 'Tracked Festival', tickets_sold: 750, available_tickets: 450, capacity: 1200, venue_country_code: 'DE' });

    await stack.put('marketplace_b', id, page(625));
    const changed = await eventually(async () => {
      const h = await stack.db('mb_statistics_history').where({ event_id: eventId }).orderBy('id', 'desc').first();
      return h.tickets_sold === 775 ? h : undefined;
    });
    expect(changed).toMatchObject({ tickets_sold_24h: 25, available_tickets: 425 });
    expect(await searchRow(eventId)).toMatchObject({ tickets_sold: 775, tickets_sold_24h: 25 });
    const runs = await stack.db('mb_scrape_runs').where({ event_id: eventId }).count({ n: '*' }).first();
    const histories = await stack.db('mb_statistics_history').where({ event_id: eventId }).count({ n: '*' }).first();
    expect(histories).toEqual(runs);

    const res = await read(`/svc/data/marketplace_b/${id}?limit=5`);
    expect(res.status).toBe(200);
    expect(res.body.latest_stats.tickets_sold).toBe(775);
  });

  it('merges a B-only event into the A event that later links it', async () => {
    const bId = randomBId();
    await stack.put('marketplace_b', bId, { name: 'Linked Show', sections: [{ name: 'Hall', capacity: 300, available: 100, sold: 200 }] });
    expect((await stack.add({ marketplace: 'marketplace_b', event_id: bId })).status).toBe(201);
    const local = Number((await stack.scraped('marketplace_b', bId)).event_id);

    const aId = randomAId();
    const num = Number(aId.slice(2));
    await stack.put('marketplace_a', aId, { name: 'Linked Show', marketplace_b_event_id: bId, listings: [{ section: 'Hall', quantity: 2, price: 30 }] });
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: aId })).status).toBe(201);
    await stack.scraped('marketplace_a', aId);

    expect(await stack.db('events').where({ id: local }).first()).toBeUndefined();
    expect(await stack.db('events').where({ id: num }).first('marketplace_b_event_id', 'capacity')).toEqual({ marketplace_b_event_id: bId, capacity: 300 });
    expect((await stack.record('marketplace_b', bId))!.event_id).toBe(num);
    // B's next ticks write to the merged event.
    const runs = async () => Number((await stack.db('mb_scrape_runs').where({ event_id: num }).count({ n: '*' }).first())!.n);
    const merged = await runs();
    expect(merged).toBeGreaterThan(0);
    await eventually(async () => ((await runs()) > merged ? true : undefined));
    expect(await searchRow(num)).toMatchObject({ event_name: 'Linked Show', capacity: 300 });
  });
});

describe('adding is idempotent', { timeout: 120_000 }, () => {
  it('concurrent adds of one event, in any spelling, make one record and one workflow', async () => {
    const id = randomAId();
    await stack.put('marketplace_a', id, { listings: [{ section: 'S', quantity: 1, price: 10 }] });
    const bodies = Array.from({ length: 8 }, (_, i) =>
      i % 2 ? { marketplace: 'marketplace_a', event_id: id } : { marketplace: 'marketplace_a', url: `https://marketplace-a.example/some-slug/event/${id}` },
    );
    const answers = await Promise.all(bodies.map((b) => stack.add(b)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    expect(await stack.db('tracked_events').where({ marketplace: 'marketplace_a', external_id: id }).count({ n: '*' }).first()).toEqual({ n: 1 });
    await stack.scraped('marketplace_a', id);
    const runs = [];
    for await (const w of stack.client.workflow.list({ query: `WorkflowId = '${trackingWorkflowId('marketplace_a', id)}'` })) runs.push(w);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.status.name).toBe('RUNNING');
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: id })).status).toBe(200);
  });
});

describe('failures', { timeout: 120_000 }, () => {
  it('an event the marketplace does not know ends the tracking as failed; adding it again restarts it', async () => {
    const id = randomAId();
    const added = await stack.add({ marketplace: 'marketplace_a', event_id: id });
    expect(added.status).toBe(201);
    const failed = await eventually(async () => {
      const r = await stack.record('marketplace_a', id);
      return r?.status === 'failed' ? r : undefined;
    });
    expect(failed.last_error).toMatch(/no such event/);
    expect(failed.last_error_at).not.toBeNull();
    // The row is marked failed by the workflow's last activity, just before the workflow itself
    // fails: wait for that too rather than catching it in between.
    const handle = stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', id));
    const status = await eventually(async () => {
      const name = (await handle.describe()).status.name;
      return name === 'RUNNING' ? undefined : name;
    });
    expect(status).toBe('FAILED');

    // The event appears on the marketplace; adding it again starts a fresh tracking.
    await stack.put('marketplace_a', id, { listings: [{ section: 'S', quantity: 1, price: 10 }] });
    const restarted = await stack.add({ marketplace: 'marketplace_a', event_id: id });
    expect(restarted.status).toBe(200);
    expect(restarted.body).toMatchObject({ id: added.body.id, status: 'pending' });
    const active = await stack.scraped('marketplace_a', id);
    expect(active.last_error).toBeNull();
  });

  it('runs each tick on the scrapes queue, the tracking itself on the monitors queue', async () => {
    const id = randomAId();
    await stack.put('marketplace_a', id, { listings: [{ section: 'S', quantity: 1, price: 10 }] });
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: id })).status).toBe(201);
    await stack.scraped('marketplace_a', id);
    const handle = stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', id));
    expect((await handle.describe()).taskQueue).toBe(stack.config.MONITOR_TASK_QUEUE);
    const { events } = await handle.fetchHistory();
    const scheduled = (events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'trackTick');
    expect(scheduled.length).toBeGreaterThan(0);
    for (const e of scheduled) expect(e.activityTaskScheduledEventAttributes!.taskQueue!.name).toBe(stack.config.SCRAPE_TASK_QUEUE);
  });

  it('a retried tick can tell, before scraping again, that its chain already applied it, and does not scrape', async () => {
    const id = randomAId();
    await stack.put('marketplace_a', id, { listings: [{ section: 'S', quantity: 1, price: 10 }] });
    expect((await stack.add({ marketplace: 'marketplace_a', event_id: id })).status).toBe(201);
    await stack.scraped('marketplace_a', id);
    const row = await stack.db('tracked_events').where({ marketplace: 'marketplace_a', external_id: id }).first('tick_epoch', 'last_tick', 'event_id');
    const ref = { marketplace: 'marketplace_a' as const, externalId: id, epoch: row.tick_epoch as string };
    const eventId = Number(row.event_id);
    expect(await readTickState(stack.db, { ...ref, tick: row.last_tick })).toEqual({ applied: true, eventId });
    expect(await readTickState(stack.db, { ...ref, tick: 1 })).toEqual({ applied: true, eventId });
    expect(await readTickState(stack.db, { ...ref, tick: row.last_tick + 1000 })).toEqual({ applied: false, eventId });
    expect(await readTickState(stack.db, { ...ref, epoch: 'another-chain', tick: 1 })).toEqual({ applied: false, eventId });
    expect(await readTickState(stack.db, { ...ref, externalId: randomAId(), tick: 1 })).toEqual({ applied: false, eventId: null });

    // The activity itself, retried for that applied tick: it answers without fetching the page.
    // The tracking is ended first so that its own ticks do not fetch meanwhile.
    await stack.client.workflow.getHandle(trackingWorkflowId('marketplace_a', id)).terminate('test: ticks stop here');
    const http = createHttpFetcher({ concurrency: 1, timeoutMs: 15_000 });
    try {
      const { trackTick } = createTrackingActivities({
        db: stack.db,
        log: createLogger('silent'),
        baseUrls: { marketplace_a: stack.sim.marketplaceUrls.marketplace_a, marketplace_b: stack.sim.marketplaceUrls.marketplace_b },
        intervalMs: 300,
        limits: trackingLimits(stack.config),
        http,
      });
      const fetched = await hits(stack.sim, 'marketplace_a', id);
      const result = await new MockActivityEnvironment().run(trackTick, { ...ref, tick: row.last_tick });
      expect(result).toMatchObject({ applied: false, eventId, newSales: 0 });
      expect(await hits(stack.sim, 'marketplace_a', id)).toBe(fetched);
      // A tick not applied yet does fetch: the check above is not passing for want of a fetch.
      expect(await new MockActivityEnvironment().run(trackTick, { ...ref, tick: row.last_tick + 1 })).toMatchObject({ applied: true, eventId });
      expect(await hits(stack.sim, 'marketplace_a', id)).toBe(fetched + 1);
    } finally {
      http.close();
    }
  });

  it('a failing marketplace is retried with back-off and the tracking recovers', async () => {
    const id = randomBId();
    const body = { sections: [{ name: 'S', capacity: 10, available: 5, sold: 5 }], offers: [] };
    await stack.put('marketplace_b', id, { ...body, behaviour: 'error' });
    expect((await stack.add({ marketplace: 'marketplace_b', event_id: id })).status).toBe(201);
    const failing = await eventually(async () => {
      const r = await stack.record('marketplace_b', id);
      return r?.status === 'failing' ? r : undefined;
    });
    expect(failing.last_error).toMatch(/upstream: .*503/);
    expect(failing.scrape_count).toBe(0);
    await stack.put('marketplace_b', id, body);
    const recovered = await stack.scraped('marketplace_b', id);
    expect(recovered.last_error).toBeNull();
  });
});
