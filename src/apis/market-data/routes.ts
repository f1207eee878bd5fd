// Market Data API (spec 4.1): catalog search, marketplace A and B event statistics, sales,
// artists, event tracking and the liveness probe. Each endpoint lives in its own module; this
// file only lists them in the spec's order. Errors are `{status: 'error', code, message}`
// (errors.ts, spec 7.2).
import { z } from 'zod';
import type { ApiModule } from '../../gateway/app.ts';
import type { RouteSpec } from '../../gateway/route.ts';
import { marketDataFailures } from './errors.ts';
import { artistRoute } from './artist.ts';
import { marketplaceARoute } from './marketplace-a.ts';
import { marketplaceBRoute } from './marketplace-b.ts';
import { salesRoute } from './sales.ts';
import { addEventRoute } from './events-add.ts';
import { searchRoute } from './search.ts';

const pingSchema = z.object({ status: z.literal('ok'), time: z.iso.datetime() }).meta({ id: 'MarketDataPing' });

const pingRoute: RouteSpec = {
  operationId: 'pingMarketData',
  summary: 'Liveness probe',
  responses: { 200: { description: 'Up', schema: pingSchema } },
  // No query of its own: the gateway's admission of this paid request has just read and
  // written the database, so an answer here means the data backend answered too.
  handler: async (ctx) => {
    ctx.body = { status: 'ok', time: new Date().toISOString() };
  },
};

export const marketDataApi: ApiModule = {
  api: 'market_data',
  failures: marketDataFailures,
  routes: [
    // MARKET-DATA-ROUTES (each endpoint module adds its route here)
    searchRoute,
    marketplaceARoute,
    salesRoute,
    marketplaceBRoute,
    artistRoute,
    addEventRoute,
    pingRoute,
  ],
};
