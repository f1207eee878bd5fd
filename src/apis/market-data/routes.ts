// Market Data API (spec 4.1): catalog search, marketplace A and B event statistics, sales,
// artists, event tracking and the liveness probe. Each endpoint lives in its own module; this
// file only lists them in the spec's order. Errors are `{status: 'error', code, message}`
// (errors.ts, spec 7.2).
import { z } from 'zod';
import type { ApiModule } from '../../gateway/app.ts';
import { CachedProbe, notReadySchema, probeFor } from '../../gateway/readiness.ts';
import type { RouteSpec } from '../../gateway/route.ts';
import type { Pool } from '../../../db/pool.ts';
import { marketDataFailures } from './errors.ts';
import { artistRoute } from './artist.ts';
import { marketplaceARoute } from './marketplace-a.ts';
import { marketplaceBRoute } from './marketplace-b.ts';
import { salesRoute } from './sales.ts';
import { addEventRoute } from './events-add.ts';
import { searchRoute } from './search.ts';

const pingSchema = z.object({ status: z.literal('ok'), time: z.iso.datetime() }).meta({ id: 'MarketDataPing' });

// Readiness of what every Market Data endpoint reads: its database, through the per-request
// pool. The gateway's admission reads the billing tables, which need not be the same pool.
const databaseProbe = probeFor<Pool>(
  (pool) => new CachedProbe(async () => void (await pool.query('SELECT 1')), { unavailableMessage: 'the market data database cannot be reached' }),
);

const pingRoute: RouteSpec = {
  operationId: 'pingMarketData',
  summary: 'Readiness probe: the Market Data database answers',
  responses: {
    200: {
      description:
        'Up: the Market Data database answered `SELECT 1` (bounded to 2 s; the answer is reused for 1 s). 1 credit.',
      schema: pingSchema,
    },
    503: {
      description: 'Gateway envelope `service_unavailable` (spec 7.1): the Market Data database cannot be reached within 2 s. Not billed.',
      schema: notReadySchema,
    },
  },
  handler: async (ctx) => {
    await databaseProbe(ctx.state.services.pool).assertReady((err) => ctx.state.log.warn({ err }, 'market data database not ready'));
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
