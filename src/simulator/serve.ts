// How every simulated platform answers a request for one event: unknown event or wrong region
// is a 404, then the event's behaviour decides (a transient 503, a 404, a hang, a slow answer,
// a malformed page, or the platform's normal page). Platform modules only render.
import type { Context } from 'koa';
import type { PlatformKey } from '../platform/registry.ts';
import { serveBehaviour } from './behaviour.ts';
import type { SimEvent, SimStore } from './state.ts';

export interface PageContent {
  type: 'html' | 'json';
  body: string | object;
  status?: number;
}

export interface ServeTarget {
  platform: PlatformKey;
  key: string;
  /** The region the request asks for; the event is only found in its own region. */
  region: string | null;
  /** pf_01's data arms fail on their own, per the event's `arms`. */
  arm?: 'v1' | 'v2';
  /** How a 404 or 503 looks on this route. */
  type: 'html' | 'json';
}

export type Render = (event: SimEvent, variant: { malformed: boolean }) => PageContent;
export type ServeEvent = (ctx: Context, target: ServeTarget, render: Render) => Promise<void>;

function answer(ctx: Context, content: PageContent): void {
  ctx.status = content.status ?? 200;
  if (content.type === 'json') {
    ctx.type = 'application/json';
    ctx.body = typeof content.body === 'string' ? content.body : JSON.stringify(content.body);
  } else {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = String(content.body);
  }
}

function failure(type: 'html' | 'json', status: 404 | 503): PageContent {
  const text = status === 404 ? 'Event not found' : 'Service temporarily unavailable';
  return type === 'json'
    ? { type, status, body: { error: text } }
    : { type, status, body: `<!doctype html><html><head><title>${status}</title></head><body><h1>${text}</h1></body></html>` };
}

export function createServe(store: SimStore): ServeEvent {
  return async (ctx, target, render) => {
    const event = store.get(target.platform, target.key);
    if (!event || (target.region !== null && target.region.toLowerCase() !== event.region)) {
      return answer(ctx, failure(target.type, 404));
    }
    event.hits++;
    // pf_01's data arms fail on their own, per the event's `arms`, instead of counting down `failures`.
    if (target.arm && event.arms[target.arm] === 'error') return answer(ctx, failure(target.type, 503));
    return serveBehaviour(
      ctx,
      event,
      {
        page: (variant) => answer(ctx, render(event, variant)),
        failure: (status) => answer(ctx, failure(target.type, status)),
      },
      { countFailures: !target.arm },
    );
  };
}
