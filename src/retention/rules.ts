// Every retention rule the housekeeping runs (src/runtime/housekeeping.ts), in the order it runs
// them. One rule per table; the tables that need none, and why, are in docs/operations.md
// ("Retention"), which lists every table of the schema.
import type { Config } from '../config.ts';
import { DEFAULT_SCHEDULE_MS, retryScheduleSpanMs } from '../webhooks/retry-schedule.ts';
import { creditLedgerRule, meterBatchesRule, usageCountersRule } from './billing.ts';
import { monitorTargetChecksRule, monitorTargetStatusRule, targetSnapshotsRule } from './monitor-targets.ts';
import { notificationsRule } from './notifications.ts';
import { rateLimitWindowsRule } from './rate-limit-windows.ts';
import type { RetentionRule } from './rule.ts';
import { stripeEventsRule } from './stripe-events.ts';
import { trackingHistoryRules } from './tracking-history.ts';
import { deletedWebhooksRule, webhookDeliveriesRule } from './webhooks.ts';
import { watchlistChangesRule } from './watchlist-changes.ts';
import { watchlistItemsRule } from './watchlist-items.ts';

export type RetentionConfig = Pick<
  Config,
  | 'BILLING_PROVIDER'
  | 'STREAM_RETENTION_HOURS'
  | 'WEBHOOK_RETENTION_DAYS'
  | 'WEBHOOK_RETRY_SCHEDULE_MS'
  | 'WATCHLIST_CHANGES_RETENTION_DAYS'
  | 'WATCHLIST_DELETED_RETENTION_DAYS'
  | 'CREDIT_LEDGER_RETENTION_DAYS'
  | 'STRIPE_EVENTS_RETENTION_DAYS'
  | 'MONITOR_UNWATCHED_RETENTION_HOURS'
  | 'TRACKING_DETAIL_RETENTION_HOURS'
>;

export function retentionRules(config: RetentionConfig): RetentionRule[] {
  const ledgerDays = config.CREDIT_LEDGER_RETENTION_DAYS;
  const unwatchedHours = config.MONITOR_UNWATCHED_RETENTION_HOURS;
  return [
    rateLimitWindowsRule(),
    notificationsRule({ retentionHours: config.STREAM_RETENTION_HOURS }),
    watchlistChangesRule({ retentionDays: config.WATCHLIST_CHANGES_RETENTION_DAYS }),
    watchlistItemsRule({ retentionDays: config.WATCHLIST_DELETED_RETENTION_DAYS, notificationsRetentionHours: config.STREAM_RETENTION_HOURS }),
    // Deliveries before their deleted webhooks: a webhook goes once it has none left. Parked ones
    // expire after the schedule's span, as on their account's resume (temporal/runtime.ts).
    webhookDeliveriesRule({
      retentionDays: config.WEBHOOK_RETENTION_DAYS,
      parkedExpireAfterMs: retryScheduleSpanMs(config.WEBHOOK_RETRY_SCHEDULE_MS ?? DEFAULT_SCHEDULE_MS),
    }),
    deletedWebhooksRule({ retentionDays: config.WEBHOOK_RETENTION_DAYS }),
    // The ledger before the batches its rows name.
    creditLedgerRule({ retentionDays: ledgerDays, keepUnreported: config.BILLING_PROVIDER === 'stripe' }),
    meterBatchesRule({ retentionDays: ledgerDays }),
    usageCountersRule({ retentionDays: ledgerDays }),
    stripeEventsRule({ retentionDays: config.STRIPE_EVENTS_RETENTION_DAYS }),
    targetSnapshotsRule({ retentionHours: unwatchedHours }),
    monitorTargetStatusRule({ retentionHours: unwatchedHours }),
    monitorTargetChecksRule({ retentionHours: unwatchedHours }),
    ...trackingHistoryRules({ detailHours: config.TRACKING_DETAIL_RETENTION_HOURS }),
  ];
}
