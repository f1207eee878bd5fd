// Event tracking (POST /svc/data/events/add, workflows/track-event.ts): one row per tracked
// marketplace event. The unique (marketplace, external_id) makes adding idempotent under
// concurrency: concurrent adds of one event meet on this index, and exactly one inserts.
//
// status: `pending` (tracking started, no successful scrape yet), `active` (the last scrape
// succeeded), `failing` (the last scrape failed with a transient error; tracking goes on with a
// growing back-off), `failed` (tracking ended: the marketplace has no such event; adding the
// event again restarts it).
//
// tick_epoch and last_tick make each tracking tick write at most once: a tick is numbered by its
// workflow chain (epoch: the first run's id) and its position in it; a retried activity finds
// its tick already applied and writes nothing.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tracked_events', (t) => {
    t.bigIncrements('id').primary();
    t.text('marketplace').notNullable();
    t.text('external_id').notNullable().comment('the id in the marketplace event URL: E-<digits> on A');
    t.bigInteger('event_id').nullable().references('events.id').onDelete('SET NULL').comment('catalog id, once the first scrape wrote the event');
    t.text('workflow_id').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_scraped_at', { useTz: true }).nullable();
    t.integer('scrape_count').notNullable().defaultTo(0);
    t.text('last_error').nullable();
    t.timestamp('last_error_at', { useTz: true }).nullable();
    t.text('tick_epoch').nullable();
    t.integer('last_tick').nullable();
    t.unique(['marketplace', 'external_id']);
  });
  await knex.raw(`ALTER TABLE tracked_events ADD CONSTRAINT tracked_events_marketplace_valid CHECK (marketplace IN ('marketplace_a', 'marketplace_b'))`);
  await knex.raw(`ALTER TABLE tracked_events ADD CONSTRAINT tracked_events_status_valid CHECK (status IN ('pending', 'active', 'failing', 'failed'))`);
  await knex.raw('CREATE INDEX tracked_events_event ON tracked_events (event_id)');
}
