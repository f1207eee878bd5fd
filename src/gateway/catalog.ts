// Every operation of spec section 4: method, path, owning API and credit cost (section 8).
// The gateway mounts an operation only when its API provides a handler; the rest answer 404.
import { GatewayError } from './errors.ts';
import type { HttpMethod } from './route.ts';

export type ApiName = 'market_data' | 'live_availability' | 'watchlist' | 'stream' | 'account';
export const API_NAMES: readonly ApiName[] = ['market_data', 'live_availability', 'watchlist', 'stream', 'account'];

/** Credits for one request; may reject a malformed quantity-billed parameter (400 invalid_parameter). */
export type CostRule = number | ((query: Record<string, string | string[] | undefined>) => number);

export interface Operation {
  method: HttpMethod;
  /** Koa-router path; `:name` segments, with a pattern a value must match or the path is malformed (404). */
  path: string;
  pathPatterns?: Record<string, RegExp>;
  api: ApiName;
  cost: CostRule;
}

export const SALES_LIMIT_DEFAULT = 20;
export const SALES_LIMIT_MAX = 200;

/**
 * sales_limit of the marketplace A sales list: the default when absent, else 1..SALES_LIMIT_MAX
 * (spec 7.1 invalid_parameter otherwise). Read by the gateway to bill and by the handler.
 */
export function salesLimit(query: Record<string, string | string[] | undefined>): number {
  const raw = query.sales_limit;
  if (raw === undefined) return SALES_LIMIT_DEFAULT;
  // Decimal digits only (no sign, exponent, fraction, spaces or repeats); leading zeros are
  // still the same integer, so "020" and "0020" both mean 20.
  if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw) || Number(raw) < 1 || Number(raw) > SALES_LIMIT_MAX) {
    throw new GatewayError('invalid_parameter', `sales_limit must be an integer from 1 to ${SALES_LIMIT_MAX}`);
  }
  return Number(raw);
}

/** ceil(sales_limit / 20), validated before anything is charged. */
export function salesListCost(query: Record<string, string | string[] | undefined>): number {
  return Math.ceil(salesLimit(query) / 20);
}

const WATCHLIST_ID = { id: /^[1-9][0-9]{0,15}$/ };

export const OPERATIONS = {
  // 4.1 Market Data
  searchEvents: { method: 'POST', path: '/svc/data/search', api: 'market_data', cost: 1 },
  getMarketplaceAEvent: { method: 'GET', path: '/svc/data/marketplace_a/:event_id', api: 'market_data', cost: 1 },
  listMarketplaceASales: { method: 'GET', path: '/svc/data/sales/marketplace_a/:event_id', api: 'market_data', cost: salesListCost },
  getMarketplaceBEvent: { method: 'GET', path: '/svc/data/marketplace_b/:tm_event_id', api: 'market_data', cost: 1 },
  getArtist: { method: 'GET', path: '/svc/data/artist', api: 'market_data', cost: 1 },
  addEvent: { method: 'POST', path: '/svc/data/events/add', api: 'market_data', cost: 1 },
  pingMarketData: { method: 'GET', path: '/svc/data/ping', api: 'market_data', cost: 1 },
  // 4.2 Live Availability
  listPlatforms: { method: 'GET', path: '/events/platforms', api: 'live_availability', cost: 5 },
  scrapeEvent: { method: 'POST', path: '/events/scrape', api: 'live_availability', cost: 5 },
  pingLiveAvailability: { method: 'GET', path: '/events/ping', api: 'live_availability', cost: 5 },
  // 4.3 Watchlist (health is listed before :id so the literal segment wins)
  listWatchlist: { method: 'GET', path: '/watchlist', api: 'watchlist', cost: 0 },
  createWatchlistItem: { method: 'POST', path: '/watchlist', api: 'watchlist', cost: 0 },
  watchlistHealth: { method: 'GET', path: '/watchlist/health', api: 'watchlist', cost: 0 },
  getWatchlistItem: { method: 'GET', path: '/watchlist/:id', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  updateWatchlistItem: { method: 'PATCH', path: '/watchlist/:id', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  deleteWatchlistItem: { method: 'DELETE', path: '/watchlist/:id', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  // Webhooks (issue 15): the account's delivery endpoints, under the Watchlist grant
  listWebhooks: { method: 'GET', path: '/webhooks', api: 'watchlist', cost: 0 },
  createWebhook: { method: 'POST', path: '/webhooks', api: 'watchlist', cost: 0 },
  getWebhook: { method: 'GET', path: '/webhooks/:id', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  updateWebhook: { method: 'PATCH', path: '/webhooks/:id', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  deleteWebhook: { method: 'DELETE', path: '/webhooks/:id', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  rotateWebhookSecret: { method: 'POST', path: '/webhooks/:id/rotate-secret', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  listWebhookDeliveries: { method: 'GET', path: '/webhooks/:id/deliveries', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  testWebhook: { method: 'POST', path: '/webhooks/:id/test', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  // A malformed delivery id is the API's 404 (`no delivery with that id`), checked by its handler.
  retryWebhookDelivery: { method: 'POST', path: '/webhooks/:id/deliveries/:delivery_id/retry', pathPatterns: WATCHLIST_ID, api: 'watchlist', cost: 0 },
  // 4.4 Account
  getUsage: { method: 'GET', path: '/usage', api: 'account', cost: 0 },
} as const satisfies Record<string, Operation>;

export type OperationId = keyof typeof OPERATIONS;

export function operation(id: string): Operation {
  const op = (OPERATIONS as Record<string, Operation>)[id];
  if (!op) throw new Error(`operation ${id} is not in the catalog`);
  return op;
}
