// Billing records: the credit ledger, the per-period counters and the meter batches are the
// evidence of what an account was charged, so they are kept long: CREDIT_LEDGER_RETENTION_DAYS
// (400 by default: a year's invoices and their disputes, with a margin).
//
// credit_ledger: one row per paid request. A `reserved` row is never pruned: it waits to be
// captured or released (src/billing/local-provider.ts releases orphans after
// RESERVATION_TIMEOUT_MS). A settled row (`charged` or `released`) goes once it was settled more
// than the retention ago; with Stripe billing, a charged row not yet in a meter batch stays too,
// until the meter sync has recorded it (src/billing/stripe/meter-sync.ts), however old.
//
// usage_counters: one row per account and billing period. A period's counter goes once the
// period started more than the retention ago, unless it is still the account's current period
// or a reservation in it is still open (a release subtracts from it).
//
// meter_batches: what was reported to the Stripe meter. A sent or expired batch goes once it was
// formed more than the retention ago and no ledger row names it any more; a pending one never.
import { deleteRule, type RetentionRule } from './rule.ts';

export function creditLedgerRule(opts: { retentionDays: number; keepUnreported: boolean }): RetentionRule {
  return deleteRule('credit_ledger', 1_000, (limit) => ({
    // credit_ledger_settled (migration 028) yields the settled rows oldest first; rows lie in the
    // table roughly in the order they were written, so a batch touches few pages.
    sql: `DELETE FROM credit_ledger WHERE request_id IN (
            SELECT l.request_id FROM credit_ledger l
            WHERE l.state <> 'reserved' AND l.settled_at < now() - make_interval(days => ?)
              AND (NOT ? OR l.state <> 'charged' OR l.meter_batch IS NOT NULL
                   OR NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = l.account_id AND a.customer_id IS NOT NULL))
            ORDER BY l.settled_at LIMIT ?)`,
    bindings: [opts.retentionDays, opts.keepUnreported, limit],
  }));
}

export function usageCountersRule(opts: { retentionDays: number }): RetentionRule {
  return deleteRule('usage_counters', 1_000, (limit) => ({
    sql: `DELETE FROM usage_counters WHERE (account_id, period_start) IN (
            SELECT u.account_id, u.period_start FROM usage_counters u
            WHERE u.period_start < now() - make_interval(days => ?)
              AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.account_id = u.account_id AND s.current_period_start = u.period_start)
              AND NOT EXISTS (SELECT 1 FROM credit_ledger l
                              WHERE l.state = 'reserved' AND l.account_id = u.account_id AND l.period_start = u.period_start)
            LIMIT ?)`,
    bindings: [opts.retentionDays, limit],
  }));
}

export function meterBatchesRule(opts: { retentionDays: number }): RetentionRule {
  return deleteRule('meter_batches', 1_000, (limit) => ({
    // meter_batches_settled (migration 028) lists the sent and expired ones oldest first.
    sql: `DELETE FROM meter_batches WHERE id IN (
            SELECT b.id FROM meter_batches b
            WHERE b.state <> 'pending' AND b.created_at < now() - make_interval(days => ?)
              AND NOT EXISTS (SELECT 1 FROM credit_ledger l WHERE l.meter_batch = b.id)
            ORDER BY b.created_at LIMIT ?)`,
    bindings: [opts.retentionDays, limit],
  }));
}
