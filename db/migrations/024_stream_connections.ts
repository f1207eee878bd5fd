// Issue 25: open stream connections are capped per key and per account, counted across every
// stream node. stream_connections holds one row per connection a node has admitted (reserved
// before its upgrade, deleted at its close); stream_nodes one row per running node, touched
// every few seconds, so the rows of a node that died are no longer counted once it stops
// touching and are swept by any other node. api_keys.stream_connection_limit is a key's own cap
// (null: STREAM_MAX_CONNECTIONS_PER_KEY), set like its rate limit.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('api_keys', (t) => {
    t.integer('stream_connection_limit').nullable().comment('open stream connections this key may hold; null: the service default');
  });
  await knex.schema.createTable('stream_nodes', (t) => {
    t.text('node_id').primary();
    t.timestamp('seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now()).comment('the node is alive while this is recent');
  });
  await knex.schema.createTable('stream_connections', (t) => {
    t.uuid('id').primary().comment('the connection id (hello.connection_id, X-Request-Id of the upgrade)');
    t.text('node_id').notNullable();
    t.text('key_id').notNullable();
    t.bigInteger('account_id').notNullable();
    t.timestamp('opened_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('CREATE INDEX stream_connections_account ON stream_connections (account_id)');
  await knex.raw('CREATE INDEX stream_connections_node ON stream_connections (node_id)');
}
