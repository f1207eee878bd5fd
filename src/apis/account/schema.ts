// Response schema of GET /usage (spec 2.7): validates our output in tests and documents it.
import { z } from 'zod';

const timestamp = z.iso.datetime();

export const usageReportSchema = z
  .object({
    customer_id: z.string().nullable().meta({ description: 'Billing customer id; null when the account has no billing account' }),
    plan: z.string().nullable().meta({ description: 'Plan id; null without an active or trialing subscription' }),
    plan_ids: z.object({
      subscription_id: z.string().nullable(),
      price_id: z.string().nullable(),
      product_id: z.string().nullable(),
    }),
    status: z.enum(['active', 'trialing', 'none']),
    usage_status: z.enum(['ok', 'approaching_limit', 'over_included', 'at_hard_cap', 'none']),
    cancel_at_period_end: z.boolean(),
    canceled_at: timestamp.nullable(),
    trial_end: timestamp.nullable(),
    unit: z.literal('credits'),
    as_of: timestamp,
    period: z.object({
      start: timestamp.nullable(),
      end: timestamp.nullable(),
      days_remaining: z.number().int(),
      elapsed_fraction: z.number().min(0).max(1),
    }),
    credits: z.object({
      included: z.number().int(),
      used: z.number().int(),
      remaining: z.number().int(),
      overage: z.number().int(),
      percent_used: z.number(),
      projected_used: z.number().int(),
      hard_cap: z.union([z.number().int(), z.literal('unlimited')]),
      in_overage: z.boolean(),
    }),
  })
  .meta({ id: 'UsageReport' });

export type UsageReport = z.infer<typeof usageReportSchema>;
