// Market Data API. This issue builds the liveness probe; search, events, sales, artists and
// tracking arrive with the Market Data issue and are not routed until then.
import { z } from 'zod';
import type { ApiModule } from '../../gateway/app.ts';
import { marketDataFailures } from './errors.ts';

const pingSchema = z.object({ status: z.literal('ok'), time: z.iso.datetime() }).meta({ id: 'MarketDataPing' });

export const marketDataApi: ApiModule = {
  api: 'market_data',
  failures: marketDataFailures,
  routes: [
    {
      operationId: 'pingMarketData',
      summary: 'Liveness probe: answers once the data backend answers',
      responses: {
        200: { description: 'Up', schema: pingSchema },
        503: { description: 'EDGE_UNAVAILABLE' },
        504: { description: 'EDGE_TIMEOUT' },
      },
      handler: async (ctx) => {
        await ctx.state.services.db.raw('SELECT 1');
        ctx.body = { status: 'ok', time: new Date().toISOString() };
      },
    },
  ],
};
