// The simulated marketplaces A, B and C (docs/simulator.md, "Marketplaces A, B and C"), each
// mounted under /{marketplace}/ of the simulator in its own shape, with their control API under
// /_sim/{marketplace}/. server.ts calls mountMarketplaces once.
import Router from '@koa/router';
import type Koa from 'koa';
import { MARKETPLACES, type MarketplaceKey } from '../../market-data/tracking-ref.ts';
import { marketplaceControlRouter } from './control.ts';
import { mountMarketplaceA } from './marketplace-a.ts';
import { mountMarketplaceB } from './marketplace-b.ts';
import { mountMarketplaceC } from './marketplace-c.ts';
import { createMarketplaceServe, type ServeMarketplaceEvent } from './serve.ts';
import { MarketplaceStore } from './state.ts';

export { MarketplaceStore } from './state.ts';

const MOUNTS: Record<MarketplaceKey, (router: Router, serve: ServeMarketplaceEvent) => void> = {
  marketplace_a: mountMarketplaceA,
  marketplace_b: mountMarketplaceB,
  marketplace_c: mountMarketplaceC,
};

/** Adds the marketplaces' control routes (before the platforms' ones) and their pages to `app`. */
export function mountMarketplaces(app: Koa, options: { seed: boolean }): MarketplaceStore {
  const store = new MarketplaceStore(undefined, options.seed);
  const control = marketplaceControlRouter(store);
  app.use(control.routes());
  const serve = createMarketplaceServe(store);
  for (const marketplace of MARKETPLACES) {
    const router = new Router({ prefix: `/${marketplace}` });
    MOUNTS[marketplace](router, serve);
    app.use(router.routes()).use(router.allowedMethods());
  }
  return store;
}
