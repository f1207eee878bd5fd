// Account API: GET /usage, read live from the billing provider on every call.
import { BillingUnavailableError, isServed } from '../../billing/provider.ts';
import type { ApiModule } from '../../gateway/app.ts';
import { AccountError, accountFailures } from './errors.ts';
import { usageReportSchema } from './schema.ts';
import { buildUsageReport } from './usage-report.ts';

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
        const sub = snapshot.subscription;
        if (sub && snapshot.plan && !snapshot.plan.priceId && isServed(sub.status)) {
          throw new AccountError(502, 'bad_plan_pricing');
        }
        ctx.body = buildUsageReport(snapshot, new Date());
      },
    },
  ],
};
