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
      summary: 'Liveness probe',
      responses: { 200: { description: 'Up', schema: pingSchema } },
      // No query of its own: the gateway's admission of this paid request has just read and
      // written the database, so an answer here means the data backend answered too.
      handler: async (ctx) => {
        ctx.body = { status: 'ok', time: new Date().toISOString() };
      },
    },
  ],
};
