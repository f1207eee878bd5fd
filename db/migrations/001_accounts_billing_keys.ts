// Accounts, plans, subscriptions, API keys, credit metering and rate-limit windows.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('plans', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.integer('included').notNullable();
    t.integer('hard_cap').nullable().comment('null: unlimited (no ceiling)');
    t.decimal('overage_unit_price', 12, 6).nullable().comment('price per credit past included');
    t.text('price_id').nullable().comment('billing price; null means the plan is misconfigured');
    t.text('product_id').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('ALTER TABLE plans ADD CONSTRAINT plans_included_nonneg CHECK (included >= 0)');
  await knex.raw('ALTER TABLE plans ADD CONSTRAINT plans_hard_cap_nonneg CHECK (hard_cap IS NULL OR hard_cap >= 0)');

  await knex.schema.createTable('accounts', (t) => {
    t.bigIncrements('id').primary();
    t.text('name').nullable();
    t.text('customer_id').nullable().unique().comment('billing customer; null: no billing account');
    t.boolean('has_payment_method').notNullable().defaultTo(true).comment('without one, usage past included credits is refused');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });

  await knex.schema.createTable('subscriptions', (t) => {
    t.text('id').primary();
    t.bigInteger('account_id').notNullable().unique().references('accounts.id').onDelete('CASCADE');
    t.text('plan_id').notNullable().references('plans.id');
    t.text('status').notNullable();
    t.timestamp('current_period_start', { useTz: true }).notNullable();
    t.timestamp('current_period_end', { useTz: true }).notNullable();
    t.boolean('cancel_at_period_end').notNullable().defaultTo(false);
    t.timestamp('canceled_at', { useTz: true }).nullable();
    t.timestamp('trial_end', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw(`ALTER TABLE subscriptions ADD CONSTRAINT subscriptions_status_valid
    CHECK (status IN ('active','trialing','past_due','paused','canceled','unpaid'))`);

  await knex.schema.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.bigInteger('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.binary('hash').notNullable().unique().comment('sha-256 of the whole key; the key itself is never stored');
    t.text('prefix').notNullable().comment('first characters, to recognise a key in a list');
    t.specificType('apis', 'text[]').notNullable();
    t.integer('rate_limit_per_minute').nullable().comment('null: the service default');
    t.timestamp('expires_at', { useTz: true }).nullable();
    t.timestamp('revoked_at', { useTz: true }).nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['account_id']);
  });

  // One row per account and billing period: the spend counter every paid request moves atomically.
  await knex.schema.createTable('usage_counters', (t) => {
    t.bigInteger('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('period_start', { useTz: true }).notNullable();
    t.bigInteger('used').notNullable().defaultTo(0);
    t.primary(['account_id', 'period_start']);
  });
  await knex.raw('ALTER TABLE usage_counters ADD CONSTRAINT usage_counters_used_nonneg CHECK (used >= 0)');

  // One row per paid request, keyed by request id: reserved before the API runs, then
  // charged (served or API 4xx) or released (denied, 5xx, or orphaned by a crash).
  await knex.schema.createTable('credit_ledger', (t) => {
    t.text('request_id').primary();
    t.bigInteger('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('key_id').notNullable();
    t.timestamp('period_start', { useTz: true }).notNullable();
    t.text('operation').notNullable();
    t.integer('credits').notNullable();
    t.text('state').notNullable();
    t.integer('status_code').nullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('settled_at', { useTz: true }).nullable();
  });
  await knex.raw(`ALTER TABLE credit_ledger ADD CONSTRAINT credit_ledger_state_valid
    CHECK (state IN ('reserved','charged','released'))`);
  await knex.raw(`CREATE INDEX credit_ledger_reserved ON credit_ledger (created_at) WHERE state = 'reserved'`);
  await knex.raw('CREATE INDEX credit_ledger_account ON credit_ledger (account_id, created_at)');

  // Fixed calendar-minute windows. UNLOGGED: losing counters in a database crash only resets
  // a minute's limits, and skipping the WAL keeps the per-request increment cheap.
  await knex.raw(`CREATE UNLOGGED TABLE rate_limit_windows (
    subject text NOT NULL,
    window_start timestamptz NOT NULL,
    hits integer NOT NULL,
    PRIMARY KEY (subject, window_start)
  )`);

  // Default plans: capped and unlimited ones (see docs/gateway.md, "Default plans").
  await knex('plans').insert([
    { id: 'free', name: 'Free', included: 1_000, hard_cap: 1_000, overage_unit_price: null, price_id: 'price_free', product_id: 'prod_api' },
    { id: 'starter', name: 'Starter', included: 20_000, hard_cap: 25_000, overage_unit_price: '0.002', price_id: 'price_starter', product_id: 'prod_api' },
    { id: 'pro', name: 'Pro', included: 200_000, hard_cap: null, overage_unit_price: '0.0015', price_id: 'price_pro', product_id: 'prod_api' },
    { id: 'enterprise', name: 'Enterprise', included: 2_000_000, hard_cap: null, overage_unit_price: '0.001', price_id: 'price_enterprise', product_id: 'prod_api' },
  ]).onConflict('id').ignore();
}
