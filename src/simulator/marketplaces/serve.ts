// How a simulated marketplace answers a request for one event, as the platforms do (serve.ts one
// level up): an unknown event is a 404, then the event's behaviour decides (a transient 503, a
// 404, a hang, a slow answer, a malformed page, or the normal page). Page modules only render.
import type { Context } from 'koa';
import type { MarketplaceKey } from '../../market-data/tracking-ref.ts';
import { serveBehaviour } from '../behaviour.ts';
import type { MarketplaceEventOf, MarketplaceStore } from './state.ts';

export interface MarketplacePage {
  type: 'html' | 'json';
  body: string | object;
}

export type RenderMarketplace<M extends MarketplaceKey> = (event: MarketplaceEventOf<M>, variant: { malformed: boolean }) => MarketplacePage;

function answer(ctx: Context, type: 'html' | 'json', status: number, body: string | object): void {
  ctx.status = status;
  if (type === 'json') {
    ctx.type = 'application/json';
    ctx.body = typeof body === 'string' ? body : JSON.stringify(body);
  } else {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = String(body);
  }
}

function failure(ctx: Context, type: 'html' | 'json', status: 404 | 503): void {
  const text = status === 404 ? 'Event not found' : 'Service temporarily unavailable';
  answer(ctx, type, status, type === 'json' ? { error: text } : `<!doctype html><html><head><title>${status}</title></head><body><h1>${text}</h1></body></html>`);
}

export type ServeMarketplaceEvent = <M extends MarketplaceKey>(
  ctx: Context,
  target: { marketplace: M; key: string; type: 'html' | 'json' },
  render: RenderMarketplace<M>,
) => Promise<void>;

export function createMarketplaceServe(store: MarketplaceStore): ServeMarketplaceEvent {
  return async (ctx, target, render) => {
    const event = store.get(target.marketplace, target.key);
    if (!event) return failure(ctx, target.type, 404);
    event.hits++;
    return serveBehaviour(ctx, event, {
      page: (variant) => {
        const page = render(event, variant);
        answer(ctx, page.type, 200, page.body);
      },
      failure: (status) => failure(ctx, target.type, status),
    });
  };
}
