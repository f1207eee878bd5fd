// The APIs behind the gateway, in the order of spec section 4.
import type { ApiModule } from '../gateway/app.ts';
import { accountApi } from './account/routes.ts';
import { liveAvailabilityApi } from './live-availability/routes.ts';
import { marketDataApi } from './market-data/routes.ts';
import { watchlistApi } from './watchlist/routes.ts';
import { webhooksApi } from './webhooks/routes.ts';

// The account's webhooks answer under the Watchlist API's grant and envelope (issue 15).
export const APIS: readonly ApiModule[] = [marketDataApi, liveAvailabilityApi, watchlistApi, webhooksApi, accountApi];
