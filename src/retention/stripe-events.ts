// stripe_events: the ids of Stripe webhook events already applied, so a redelivered event changes
// nothing twice (src/billing/stripe/webhook-endpoint.ts). Stripe retries an event for up to 3 days,
// so an id is only needed that long; it is kept STRIPE_EVENTS_RETENTION_DAYS (30, at least 4).
// An event resent after that is applied again, which changes nothing wrong: applying an event reads
// its subscription afresh from Stripe, never the event's own copy.
import { deleteRule, type RetentionRule } from './rule.ts';

export function stripeEventsRule(opts: { retentionDays: number }): RetentionRule {
  return deleteRule('stripe_events', 1_000, (limit) => ({
    // stripe_events_received (migration 028).
    sql: `DELETE FROM stripe_events WHERE id IN (
            SELECT id FROM stripe_events WHERE received_at < now() - make_interval(days => ?)
            ORDER BY received_at LIMIT ?)`,
    bindings: [opts.retentionDays, limit],
  }));
}
