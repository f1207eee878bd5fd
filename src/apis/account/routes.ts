// Account API: GET /usage, read live from the billing provider on every call.
import { BillingUnavailableError } from '../../billing/provider.ts';
import type { ApiModule } from '../../gateway/app.ts';
import { AccountError, accountFailures } from './errors.ts';
import { usageReportSchema } from './schema.ts';
import { buildUsageReport, isServedSnapshot } from './usage-report.ts';

export const accountApi: ApiModule = {
  api: 'account',
  failures: accountFailures,
  routes: [
    {
      operationId: 'getUsage',
      summary: 'Plan, billing period and credit usage of the calling key’s account',
      responses: {
        200: { description: 'Usage report (spec 2.7)', schema: usageReportSchema },
        502: { description: '`{detail: "billing_unavailable"}` or `{detail: "bad_plan_pricing"}`' },
      },
      handler: async (ctx) => {
        let snapshot;
        try {
          snapshot = await ctx.state.services.billing.snapshot(ctx.state.principal!.accountId);
        } catch (err) {
          if (err instanceof BillingUnavailableError) throw new AccountError(502, 'billing_unavailable');
          throw err;
        }
        // A served subscription on a plan without a price cannot be billed (paid requests get
        // 402 plan_unavailable); the report says so instead of showing credits.
        if (isServedSnapshot(snapshot) && !snapshot.plan!.priceId) {
          throw new AccountError(502, 'bad_plan_pricing');
        }
        ctx.body = buildUsageReport(snapshot, new Date());
      },
    },
  ],
};
