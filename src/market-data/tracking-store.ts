// The tracker's writes for one tick, in one transaction: claim the tick (at most once per tick,
// so a retried activity writes nothing twice), the catalog row (tracking-catalog.ts), then for
// marketplace A a stats snapshot, the sales not seen before (deduped by sale_ref), the daily
// rows and the price histogram; for marketplace B a scrape run with its section and offer rows
// and a statistics row; then the tracking record and the event's search row. The arithmetic is
// rollup.ts's; this module only reads its inputs and writes its outputs.
import type { Knex } from 'knex';
import type { Db } from '../../db/connection.ts';
import type { MarketplaceAEventPage, MarketplaceBEventPage } from '../scrapers/marketplaces/types.ts';
import { priceHistogram } from './price-histogram.ts';
import { DAY_MS, maDailyRows, maSnapshot, mbStatistics, MB_OFFER_TYPE_CODES, utcDate, type RollupSale } from './rollup.ts';
import { refreshSearchRows } from './search-index.ts';
import { lockMarketplaceBEvent, upsertMarketplaceAEvent, upsertMarketplaceBEvent } from './tracking-catalog.ts';
import { endTracking } from './tracking-lifecycle.ts';
import { trackingWorkflowId, type TrackableMarketplace } from './tracking-ref.ts';

type Trx = Knex.Transaction;

export interface Tick {
  marketplace: TrackableMarketplace;
  externalId: string;
  /** The tracking's workflow chain (its first run's id) and the tick's position in it. */
  epoch: string;
  tick: number;
  capturedAt: Date;
}

export interface TickOutcome {
  /** False when this tick had been applied already (a retried activity): nothing was written. */
  applied: boolean;
  eventId: number | null;
  newSales: number;
}

export type ScrapedPage = { marketplace: 'marketplace_a'; page: MarketplaceAEventPage } | { marketplace: 'marketplace_b'; page: MarketplaceBEventPage };

type TickRef = Pick<Tick, 'marketplace' | 'externalId' | 'epoch' | 'tick'>;

/** Whether a tick stands applied, and the event it wrote. */
export interface TickState {
  applied: boolean;
  eventId: number | null;
}

const TICK_COLUMNS = ['tick_epoch', 'last_tick', 'event_id'];

/** The rule: a tick is applied when its chain (epoch) has applied it or a later tick. */
export function tickState(row: { tick_epoch: string | null; last_tick: number | null; event_id: number | string | null } | undefined, tick: TickRef): TickState {
  if (!row) return { applied: false, eventId: null };
  const applied = row.tick_epoch === tick.epoch && row.last_tick !== null && row.last_tick >= tick.tick;
  return { applied, eventId: row.event_id === null ? null : Number(row.event_id) };
}

const trackingKey = (tick: TickRef) => ({ marketplace: tick.marketplace, external_id: tick.externalId });

/**
 * The tracking row, locked for the transaction; created when missing (a workflow whose adding
 * request never committed still has a record). Waits for a concurrent add's insert to commit.
 */
async function claimTick(trx: Trx, tick: Tick): Promise<TickState> {
  const key = trackingKey(tick);
  await trx('tracked_events')
    .insert({ ...key, workflow_id: trackingWorkflowId(tick.marketplace, tick.externalId) })
    .onConflict(['marketplace', 'external_id'])
    .ignore();
  return tickState(await trx('tracked_events').where(key).forUpdate().first(TICK_COLUMNS), tick);
}

/**
 * Whether a tick was applied already, read without a lock or a transaction: a retried tick
 * checks this before scraping again. Only a hint: applyTick's locked claim decides.
 */
export async function readTickState(db: Db, tick: TickRef): Promise<TickState> {
  return tickState(await db('tracked_events').where(trackingKey(tick)).first(TICK_COLUMNS), tick);
}

async function writeMarketplaceA(trx: Trx, page: MarketplaceAEventPage, capturedAt: Date): Promise<{ eventId: number; newSales: number }> {
  const eventId = await upsertMarketplaceAEvent(trx, page);
  const inserted: { sold_at: Date }[] = page.sales.length
    ? await trx('ma_sales')
        .insert(
          page.sales.map((s) => ({
            event_id: eventId,
            sale_ref: s.id,
            sold_at: s.sold_at,
            section: s.section,
            row: s.row,
            quantity: s.quantity,
            price: s.price.toFixed(2),
            currency: s.currency,
            ticket_type: s.ticket_type,
          })),
        )
        .onConflict(['event_id', 'sale_ref'])
        .ignore()
        .returning('sold_at')
    : [];
  const sales: RollupSale[] = await trx('ma_sales').where({ event_id: eventId }).select('sold_at', 'quantity', 'price', 'currency');
  const earlier = await trx('ma_stats_snapshots')
    .where({ event_id: eventId })
    .andWhere('captured_at', '<=', new Date(capturedAt.getTime() - DAY_MS))
    .orderBy([
      { column: 'captured_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .first('available_tickets', 'listings_available', 'average_ticket_price_available', 'get_in_price');
  const snapshot = maSnapshot({ capturedAt, listings: page.listings, listingCurrency: page.currency, sales, earlier: earlier ?? null });
  await trx('ma_stats_snapshots').insert({ event_id: eventId, ...snapshot });

  for (const day of maDailyRows({ snapshot, sales, newSaleDates: inserted.map((s) => utcDate(s.sold_at)) })) {
    const levels = ['available_tickets', 'listings_available', 'average_ticket_price_available'];
    // The snapshot's own day takes its levels; an earlier day keeps the levels it had (if any).
    const keep = day.stat_date === utcDate(capturedAt) ? [] : levels;
    await trx('ma_daily_stats')
      .insert({ event_id: eventId, ...day })
      .onConflict(['event_id', 'stat_date'])
      .merge(Object.keys(day).filter((c) => c !== 'stat_date' && !keep.includes(c)));
  }

  const histogram = priceHistogram(
    sales.filter((s) => s.currency === snapshot.currency),
    snapshot.currency,
  );
  await trx('ma_price_histograms')
    .insert({ event_id: eventId, ...histogram, data: JSON.stringify(histogram.data), computed_at: capturedAt })
    .onConflict('event_id')
    .merge();
  return { eventId, newSales: inserted.length };
}

async function writeMarketplaceB(trx: Trx, page: MarketplaceBEventPage, capturedAt: Date): Promise<number> {
  const eventId = await upsertMarketplaceBEvent(trx, page);
  const [run] = await trx('mb_scrape_runs').insert({ event_id: eventId, region: page.region, created_at: capturedAt }).returning('id');
  const runId = Number(run.id);
  if (page.sections.length) {
    await trx('mb_section_stats').insert(
      page.sections.map((s) => ({ run_id: runId, section_name: s.name, capacity: s.capacity, available_stock: s.available, sold_amount: s.sold, created_at: capturedAt })),
    );
  }
  if (page.offers.length) {
    await trx('mb_offer_stats').insert(
      page.offers.map((o) => ({
        run_id: runId,
        offer_name: o.name,
        offer_stock: o.stock,
        average_price_fees: o.price.toFixed(2),
        average_price_no_fees: o.face_price.toFixed(2),
        offer_type: MB_OFFER_TYPE_CODES[o.type],
        currency: o.currency,
        created_at: capturedAt,
      })),
    );
  }
  // 24 h ago, or when tracking began if that was less than 24 h ago.
  const history = trx('mb_statistics_history').where({ event_id: eventId });
  const earlier =
    (await history
      .clone()
      .andWhere('created_at', '<=', new Date(capturedAt.getTime() - DAY_MS))
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .first('tickets_sold')) ??
    (await history
      .clone()
      .orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ])
      .first('tickets_sold'));
  const figures = mbStatistics({
    sections: page.sections,
    offers: page.offers,
    currency: page.currency,
    averageSalePrice: page.average_sale_price,
    earlierTicketsSold: earlier ? Number(earlier.tickets_sold) : null,
  });
  await trx('mb_statistics_history').insert({ event_id: eventId, run_id: runId, created_at: capturedAt, ...figures });
  return eventId;
}

/** What a tick found already applied reports: nothing written. */
export function skippedTick(state: TickState): TickOutcome {
  return { applied: false, eventId: state.eventId, newSales: 0 };
}

/** Applies one tick's scrape; a tick already applied (same epoch, same or later tick) writes nothing. */
export async function applyTick(db: Db, tick: Tick, scraped: ScrapedPage): Promise<TickOutcome> {
  return db.transaction(async (trx) => {
    if (tick.marketplace === 'marketplace_b') await lockMarketplaceBEvent(trx, tick.externalId);
    const claimed = await claimTick(trx, tick);
    if (claimed.applied) return skippedTick(claimed);
    let eventId: number;
    let newSales = 0;
    if (scraped.marketplace === 'marketplace_a') ({ eventId, newSales } = await writeMarketplaceA(trx, scraped.page, tick.capturedAt));
    else eventId = await writeMarketplaceB(trx, scraped.page, tick.capturedAt);
    await trx('tracked_events')
      .where({ marketplace: tick.marketplace, external_id: tick.externalId })
      .update({
        event_id: eventId,
        status: 'active',
        last_scraped_at: tick.capturedAt,
        scrape_count: trx.raw('scrape_count + 1'),
        last_error: null,
        last_error_at: null,
        tick_epoch: tick.epoch,
        last_tick: tick.tick,
        updated_at: trx.fn.now(),
      });
    await refreshSearchRows(trx, [eventId]);
    return { applied: true, eventId, newSales };
  });
}

/**
 * Records a failed tick: `final` (the marketplace has no such event) ends the tracking as
 * `failed`, and every account's link with it (tracking-lifecycle.ts); otherwise it is `failing`
 * and goes on. No epoch check is needed here: one workflow id per event
 * (track:{marketplace}:{id}) means one chain runs at a time, and a tracking is only restarted
 * after its chain has ended.
 */
export async function recordTickFailure(db: Db, input: { marketplace: TrackableMarketplace; externalId: string; message: string; final: boolean; at: Date }): Promise<void> {
  const key = { marketplace: input.marketplace, external_id: input.externalId };
  const error = { last_error: input.message.slice(0, 1000), last_error_at: input.at };
  if (!input.final) {
    // An ended tracking stays ended.
    await db('tracked_events').where(key).whereNotIn('status', ['failed', 'ended']).update({ status: 'failing', ...error, updated_at: db.fn.now() });
    return;
  }
  await db.transaction(async (trx) => {
    const row = await trx('tracked_events').where(key).first('id');
    if (row) await endTracking(trx, Number(row.id), 'not_found', error);
  });
}
