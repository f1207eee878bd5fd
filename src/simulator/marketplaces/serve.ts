// How a simulated marketplace answers a request for one event, as the platforms do (serve.ts one
// level up): an unknown event is a 404, then the event's behaviour decides (a transient 503, a
// 404, a 429 or 403, a hang, a slow answer, a challenge page, a malformed page, or the normal
// page). Page modules only render. A marketplace's challenge is the Cloudflare-style one.
import type { Context } from 'koa';
import type { MarketplaceKey } from '../../market-data/tracking-ref.ts';
import { answerPage, failurePage, serveBehaviour, type PageContent } from '../behaviour.ts';
import { answerChallenge } from '../challenge-pages.ts';
import type { MarketplaceEventOf, MarketplaceStore } from './state.ts';

/** A marketplace page always answers 200; failures are the behaviour's. */
export type MarketplacePage = Omit<PageContent, 'status'>;

export type RenderMarketplace<M extends MarketplaceKey> = (event: MarketplaceEventOf<M>, variant: { malformed: boolean }) => MarketplacePage;

export type ServeMarketplaceEvent = <M extends MarketplaceKey>(
  ctx: Context,
  target: { marketplace: M; key: string; type: 'html' | 'json' },
  render: RenderMarketplace<M>,
) => Promise<void>;

export function createMarketplaceServe(store: MarketplaceStore): ServeMarketplaceEvent {
  return async (ctx, target, render) => {
    const event = store.get(target.marketplace, target.key);
    if (!event) return answerPage(ctx, failurePage(target.type, 404));
    event.hits++;
    return serveBehaviour(ctx, event, {
      page: (variant) => answerPage(ctx, render(event, variant)),
      failure: (status) => answerPage(ctx, failurePage(target.type, status)),
      challenge: () => answerChallenge(ctx, target.marketplace, target.type),
    });
  };
}
